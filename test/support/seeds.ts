/**
 * Seeds of randomized tests: fixed seeds, so every run covers the same cases, plus one random
 * round whose seed is printed, so runs over time explore more. An environment variable replays a
 * single seed (the fixed and random rounds are then skipped).
 */

/** The seeds to run: `fixed` then a fresh random one (printed), or only the seed `envVar` names. */
export function seedRounds(
  name: string,
  envVar: string,
  fixed: readonly number[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): number[] {
  const replay = env[envVar];
  if (replay !== undefined && replay !== "") {
    const seed = Number(replay);
    if (!Number.isSafeInteger(seed)) throw new Error(`${envVar}=${replay} is not an integer seed`);
    console.log(`${name}: replaying seed ${seed} (${envVar})`);
    return [seed];
  }
  const random = Math.floor(Math.random() * 2 ** 31);
  console.log(`${name}: fixed seeds ${fixed.join(", ")}, random seed ${random} (replay one with ${envVar}=<seed>)`);
  return [...fixed, random];
}
