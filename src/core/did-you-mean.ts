/** Damerau-free Levenshtein distance, bounded: enough for "did you mean" hints. */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur = [i];
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1;
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
    }
    prev = cur;
  }
  return prev[n];
}

/** The closest candidate to `name`, if any is close enough to be a plausible typo. */
export function closestMatch(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDist || (d === bestDist && best !== undefined && c < best)) {
      best = c;
      bestDist = d;
    }
  }
  if (best === undefined) return undefined;
  const limit = Math.max(1, Math.floor(Math.max(name.length, best.length) / 3));
  return bestDist <= limit ? best : undefined;
}

/** " Did you mean `x`?" or "" — appended to hints. */
export function didYouMean(name: string, candidates: Iterable<string>): string | undefined {
  const m = closestMatch(name, candidates);
  return m === undefined ? undefined : `did you mean \`${m}\`?`;
}
