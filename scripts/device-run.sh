#!/usr/bin/env bash
# Runs on the device machine (NVIDIA H200, through the device tool) from the repository root, with
# the files of scripts/prepare-device.sh carried. Arguments: what to run, any of
#   tests  - the GPU test files (CI=true: a missing adapter fails)
#   bench  - bench/gpu/attention.mjs (PagedAttention and SparseAttention; BENCH_PINS/BENCH_SHAPES narrow it)
#   torch  - PyTorch SDPA on the same GPU (../shared/tools/torch_decode_anchor.py)
#   tune   - `kernelc tune --profile desktop-32k` (TUNE_PROFILE, TUNE_KERNEL narrow it); kernelc.tune.json to $OUT
#   floor  - the timing floor (empty dispatches timed as the attention passes are), both copies and the
#            two small decode shapes only; $OUT/bench-floor.json (CUDA's floor: bench/gpu/torch_floor.py,
#            part of `torch`)
#   packed - bench/gpu/attention.mjs with BENCH_PROFILE=desktop-48k: the same shapes with f16 packed in
#            u32 pairs (a device without shader-f16), for the packed-versus-native table; $OUT/bench-packed.json
#   features - bench/gpu/subgroup-matrix.mjs: whether Dawn offers subgroup matrices on the adapter
#   ahead  - the paged bench on the four large decode shapes: the configured tunables against
#            ROW_LOAD_AHEAD = 1, alone and with 4096 target workgroups; $OUT/bench-ahead.json
#   plan   - bench/plan-time.mjs (the generated dispatcher's plan time, section 3 of `npm run bench`)
#            on the device machine's CPU; $OUT/plan.log
#   vearly - the paged bench on the six decode shapes: the shipped templates against a copy with
#            bench/experiments/v-early.patch (V rows loaded a tile ahead; slower on all six, 2026-12-05), with the
#            configured tunables and with ROW_LOAD_AHEAD = 1; $OUT/bench-vearly.json
#   occupancy - the paged bench on the six decode shapes: the shipped templates against copies whose row
#            shader declares 8, 16 or 24 KB more workgroup memory (caps of about 19, 11 and 8 resident
#            workgroups per SM) and session 9's no-butterfly diagnostic (wrong results);
#            bench/experiments/template-variants.mjs; $OUT/bench-occupancy.json
#   ahead1 - ROW_LOAD_AHEAD = 1 (about 32 fewer registers a lane) with more workgroups: the two small
#            decode shapes at 1024-2048 target workgroups and up to 256 splits, the four large ones at
#            2048-4096, each against the configured tunables; $OUT/bench-ahead1-{small,large}.json
#   smem   - the workgroup-memory footprint alone: the six decode shapes with the shipped templates and
#            a copy declaring 2 KB more (pad2k), each with TEST_NO_ROW_FALLBACK = 1 (the key-per-lane
#            fallback, which NVIDIA never runs, and its 3.2 KB of workgroup memory left out);
#            $OUT/bench-smem.json
#   packedcmp - the paged bench on the six decode shapes with the tuned desktop-32k split settings pinned
#            (3072/64/64 and 1024/128/64), native f16 (desktop-32k) and f16 packed in u32 (desktop-48k on a
#            device without shader-f16), alternating twice; $OUT/bench-{native,packed}-{1,2}.json
#   vsched - where the row design issues a tile's V loads (bench/experiments/template-variants.mjs:
#            vsplit, vat1) against the templates, the six decode shapes, with the configured tunables
#            (VSCHED_PINS: other pin sets; VSCHED_BASE: a template folder to compare too, e.g. an
#            earlier commit's); $OUT/bench-vsched.json
#   sweep  - the shipped row design at 128 splits (1024 workgroups) for 1 x 4096 ... 1 x 65536 keys
#            (1 to 16 tiles a workgroup): the fixed and the per-tile cost; $OUT/bench-sweep.json
#   ahead3 - the six decode shapes with the templates against a copy loading three chunks ahead
#            (bench/experiments/template-variants.mjs ahead3); $OUT/bench-ahead3.json
#   small  - the two small decode shapes with more resident workgroups (up to 192 and 256 splits), one chunk
#            ahead (fewer registers), and 64 splits, against the configured tunables: whether they are
#            latency-bound on this GPU; $OUT/bench-small.json (rows on stdout only)
#   fewsplits - the large decode shapes with at most 1, 2 or 3 splits against the configured
#            tunables; $OUT/bench-fewsplits.json
#   regs   - register counts from the NVIDIA driver's shader disk cache (bench/experiments/
#            nv-shader-cache.py), one tiny bench run per template folder / ROW_LOAD_AHEAD; $OUT/regs-*.log
#   fixed  - where the small shapes' fixed cost comes from: the attention pass run twice in a row
#            (BENCH_DOUBLE_PASS) at 1, 8 and 16 tiles a workgroup (1024 workgroups) and on 64 x 4096;
#            1 tile with 128 workgroups; a build whose tile loop never runs (noloop); the key-per-lane design (mobile-256-f16's shaders, far
#            smaller code) at 1 and 8 tiles; $OUT/bench-fixed*.json
#   waves  - how many row-design workgroups an SM holds: the attention pass with 1 and with 4 tiles a workgroup at
#            4 ... 24 workgroups per SM (132 SMs); $OUT/bench-waves-{1,4}.json
#   clocks - the GPU's SM and memory clocks (nvidia-smi, every 20 ms) while the bench runs 1 x 32768, 8 x 4096 and
#            64 x 4096 (bs 16) and while PyTorch runs: the clocks each phase ran at; $OUT/clocks.{csv,log}
#   bisect - where a tile's time goes: the templates against noloop and the nok/nov/nokv diagnostics
#            (bench/experiments/template-variants.mjs) at 1 tile a workgroup and on the two small shapes
#   ahead4 - a whole tile of K in flight (template-variants ahead4, ahead4late) against the templates: the two
#            small decode shapes and two large ones (AHEAD4_SHAPES, AHEAD4_PINS, AHEAD4_ROUNDS); $OUT/bench-ahead4.json
#   variants - the templates against the template-variants.mjs variants named by VARIANTS (VARIANT_SHAPES);
#            $OUT/bench-variants.json
#   base   - the six decode shapes and the sparse decode cases with the templates against those in .exp-base (an earlier commit's
#            templates/, made by `git archive <commit> templates | tar -x -C .exp-base --strip-components=1`
#            and carried); $OUT/bench-base.json
# Output goes to stdout and to $OUT/{tests,bench,torch}.log and $OUT/bench.json.
set -uo pipefail
for f in .device/gl/*.deb; do dpkg -x "$f" /; done
ldconfig
xz -dc .device/node.xz > /tmp/node && chmod +x /tmp/node
export PATH=/tmp:$PATH
tar -xJf .device/nm.tar.xz
mkdir -p node_modules/webgpu/dist/linux-x64
xz -dc .device/dawn.node.xz > node_modules/webgpu/dist/linux-x64/dawn.node
export KERNELC_VK_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export KERNELC_DAWN_FLAGS="enable-dawn-features=vulkan_enable_f16_on_nvidia disable-dawn-features=timestamp_quantization"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
# The paged bench on shapes $2 with the pin sets $3 (and the template folders $4, if given), ROUNDS rounds (3)
# to $OUT/$1; prints its rows without the per-round figures.
paged_rows() {
  env BENCH_ROUNDS="${ROUNDS:-3}" BENCH_SHAPES="$2" BENCH_PINS="$3" ${4:+BENCH_TEMPLATES=$4} \
    node bench/gpu/attention.mjs paged --out "$OUT/$1" 2>&1 | grep -v Warning | grep "^paged" | sed 's/(rounds.*passes scatter/| scatter/'
}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests bench torch)
for what in "${steps[@]}"; do
  case "$what" in
    tests) CI=true node node_modules/vitest/vitest.mjs run test/gpu test/fixture test/runtime > "$OUT/tests.log" 2>&1
           echo "tests exit $?"; grep -E "Test Files|Tests |FAIL|×" "$OUT/tests.log" | head -20 ;;
    bench) node bench/gpu/attention.mjs --out "$OUT/bench.json" 2>&1 | grep -v Warning | tee "$OUT/bench.log" ;;
    floor) BENCH_SHAPES=1x32768x16,8x4096x16 node bench/gpu/attention.mjs paged --out "$OUT/bench-floor.json" 2>&1 | grep -v Warning | tee "$OUT/bench-floor.log" ;;
    packed) BENCH_PROFILE=${PACKED_PROFILE:-desktop-48k} node bench/gpu/attention.mjs --out "$OUT/bench-packed.json" 2>&1 | grep -v Warning | tee "$OUT/bench-packed.log" ;;
    tune)  VK_DRIVER_FILES=$KERNELC_VK_ICD node bin/kernelc.js tune --profile "${TUNE_PROFILE:-desktop-32k}" ${TUNE_KERNEL:+--kernel $TUNE_KERNEL} --dawn-flag enable-dawn-features=vulkan_enable_f16_on_nvidia > "$OUT/tune.log" 2>&1
           echo "tune exit $?"; grep -v "^Warning" "$OUT/tune.log" | tail -20; cp kernelc.tune.json "$OUT/" 2>/dev/null ;;
    torch) python3 .device/torch_decode_anchor.py 2>&1 | grep -E "^(cudnn|flash|backend)" | tee "$OUT/torch.log"
           python3 bench/gpu/torch_prefill.py 2>&1 | grep -E "^prefill" | tee -a "$OUT/torch.log"
           python3 bench/gpu/torch_floor.py 2>&1 | grep -E "^floor" | tee -a "$OUT/torch.log" ;;
    features) VK_DRIVER_FILES=$KERNELC_VK_ICD node bench/gpu/subgroup-matrix.mjs 2>&1 | grep -v "^Warning" | tee "$OUT/features.log" ;;
    ahead) BENCH_SHAPES=64x4096x16,32x16384x16,64x4096x32,32x16384x32 \
           BENCH_PINS='[{},{"ROW_LOAD_AHEAD":1},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":4096,"MAX_SPLITS":64,"SPLIT_MIN_KEYS":64}]' \
           node bench/gpu/attention.mjs paged --out "$OUT/bench-ahead.json" 2>&1 | grep -v Warning | tee "$OUT/bench-ahead.log" ;;
    vearly) rm -rf .exp-v-early && cp -r templates .exp-v-early
           patch -s -p1 -d .exp-v-early < bench/experiments/v-early.patch ||
             git apply --directory=.exp-v-early bench/experiments/v-early.patch || exit 1
           BENCH_TEMPLATES=templates,.exp-v-early BENCH_PINS='[{},{"ROW_LOAD_AHEAD":1}]' \
           node bench/gpu/attention.mjs paged --out "$OUT/bench-vearly.json" 2>&1 | grep -v Warning | tee "$OUT/bench-vearly.log" ;;
    occupancy) dirs=$(node bench/experiments/template-variants.mjs pad8k pad16k pad24k nobfly) || exit 1
           BENCH_TEMPLATES=templates,$dirs node bench/gpu/attention.mjs paged --out "$OUT/bench-occupancy.json" 2>&1 | grep -v Warning | tee "$OUT/bench-occupancy.log" ;;
    ahead1)
           BENCH_SHAPES=1x32768x16,8x4096x16 BENCH_PINS='[{},{"ROW_LOAD_AHEAD":1},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":1536,"MAX_SPLITS":256,"SPLIT_MIN_KEYS":64},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":2048,"MAX_SPLITS":256,"SPLIT_MIN_KEYS":64},{"SPLIT_TARGET_WORKGROUPS":2048,"MAX_SPLITS":256,"SPLIT_MIN_KEYS":64},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":2048,"MAX_SPLITS":128,"SPLIT_MIN_KEYS":64}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-ahead1-small.json" 2>&1 | grep -v Warning | tee "$OUT/bench-ahead1-small.log"
           BENCH_SHAPES=64x4096x16,32x16384x16,64x4096x32,32x16384x32 BENCH_PINS='[{},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":2048,"MAX_SPLITS":64,"SPLIT_MIN_KEYS":64},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":4096,"MAX_SPLITS":64,"SPLIT_MIN_KEYS":64}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-ahead1-large.json" 2>&1 | grep -v Warning | tee "$OUT/bench-ahead1-large.log" ;;
    smem)  dirs=$(node bench/experiments/template-variants.mjs pad2k) || exit 1
           BENCH_TEMPLATES=templates,$dirs BENCH_PINS='[{},{"TEST_NO_ROW_FALLBACK":1}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-smem.json" 2>&1 | grep -v Warning | tee "$OUT/bench-smem.log" ;;
    packedcmp)
           P='[{"SPLIT_TARGET_WORKGROUPS":3072,"MAX_SPLITS":64,"SPLIT_MIN_KEYS":64},{"SPLIT_TARGET_WORKGROUPS":1024,"MAX_SPLITS":128,"SPLIT_MIN_KEYS":64}]'
           for i in 1 2; do
             BENCH_PINS=$P node bench/gpu/attention.mjs paged --out "$OUT/bench-native-$i.json" 2>&1 | grep -v Warning | tail -n 12
             BENCH_PINS=$P BENCH_PROFILE=desktop-48k node bench/gpu/attention.mjs paged --out "$OUT/bench-packed-$i.json" 2>&1 | grep -v Warning | tail -n 12
           done ;;
    vsched) dirs=$(node bench/experiments/template-variants.mjs vsplit vat1) || exit 1
           BENCH_TEMPLATES=${VSCHED_BASE:+$VSCHED_BASE,}templates,$dirs BENCH_PINS=${VSCHED_PINS:-'[{}]'} \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-vsched.json" 2>&1 | grep -v Warning | tee "$OUT/bench-vsched.log" ;;
    ahead3) dirs=$(node bench/experiments/template-variants.mjs ahead3) || exit 1
           BENCH_TEMPLATES=templates,$dirs node bench/gpu/attention.mjs paged --out "$OUT/bench-ahead3.json" 2>&1 | grep -v Warning | grep "^paged" ;;
    small) BENCH_SHAPES=1x32768x16,8x4096x16 BENCH_PINS='[{},{"ROW_LOAD_AHEAD":1},{"SPLIT_TARGET_WORKGROUPS":1536,"MAX_SPLITS":192,"SPLIT_MIN_KEYS":64},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":1536,"MAX_SPLITS":192,"SPLIT_MIN_KEYS":64},{"SPLIT_TARGET_WORKGROUPS":2048,"MAX_SPLITS":256,"SPLIT_MIN_KEYS":64},{"ROW_LOAD_AHEAD":1,"SPLIT_TARGET_WORKGROUPS":2048,"MAX_SPLITS":256,"SPLIT_MIN_KEYS":64},{"SPLIT_TARGET_WORKGROUPS":512,"MAX_SPLITS":64,"SPLIT_MIN_KEYS":64}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-small.json" 2>&1 | grep -v Warning | grep "^paged" ;;
    waves) # Resident workgroups per SM of the row shader: 1 (and 4) tiles a workgroup, 132 SMs x 4 ... 24
           # workgroups (8 KV heads x S splits); the attention pass's time steps up where a second wave begins.
           s1=""; s4=""
           for S in 66 99 116 132 148 165 198 231 264 330 396; do s1="$s1,1x$((32 * S))x16"; s4="$s4,1x$((128 * S))x16"; done
           paged_rows bench-waves-1.json "${s1#,}" '[{"SPLIT_TARGET_WORKGROUPS":100000,"MAX_SPLITS":4096,"SPLIT_MIN_KEYS":32}]'
           paged_rows bench-waves-4.json "${s4#,}" '[{"SPLIT_TARGET_WORKGROUPS":100000,"MAX_SPLITS":4096,"SPLIT_MIN_KEYS":128}]' ;;
    clocks) # The SM and memory clocks while the small and large decode shapes run (nvidia-smi every 20 ms):
           # whether the small shapes' runs keep the GPU at its full clock. $OUT/clocks.csv, $OUT/clocks.log
           nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,utilization.gpu,power.draw --format=csv,noheader -lms 20 > "$OUT/clocks.csv" &
           smi=$!
           for sh in 1x32768x16 8x4096x16 64x4096x16; do
             echo "phase $sh start $(date +%H:%M:%S.%N)"
             BENCH_SHAPES=$sh BENCH_PINS='[{}]' node bench/gpu/attention.mjs paged 2>&1 | grep -v Warning | grep "^paged" | sed 's/(rounds.*passes scatter/| scatter/'
             echo "phase $sh end $(date +%H:%M:%S.%N)"
           done 2>&1 | tee "$OUT/clocks.log"
           echo "phase torch start $(date +%H:%M:%S.%N)" >> "$OUT/clocks.log"
           python3 .device/torch_decode_anchor.py 2>&1 | grep -E "^(cudnn|flash|backend)" | tee -a "$OUT/clocks.log"
           echo "phase torch end $(date +%H:%M:%S.%N)" >> "$OUT/clocks.log"
           kill $smi
           python3 bench/gpu/clock-phases.py "$OUT/clocks.log" "$OUT/clocks.csv" ;;
    bisect) # Where a tile's time goes: the row shader against copies whose tile loop never runs (noloop) or
           # whose K, V or K and V rows come from cache row 0 (nok, nov, nokv; L1 hits): 1 tile a workgroup at
           # 4 workgroups per SM, and the two small decode shapes; $OUT/bench-bisect-{1,small}.json
           dirs=$(node bench/experiments/template-variants.mjs noloop nok nov nokv) || exit 1
           paged_rows bench-bisect-1.json 1x2112x16 '[{"SPLIT_TARGET_WORKGROUPS":100000,"MAX_SPLITS":4096,"SPLIT_MIN_KEYS":32}]' "templates,$dirs"
           paged_rows bench-bisect-small.json 1x32768x16,8x4096x16 '[{}]' "templates,$dirs" ;;
    ahead4) # A whole tile of K in flight: the templates against ahead4 / ahead4late (bench/experiments/
           # template-variants.mjs) on the small decode shapes and two large ones; $OUT/bench-ahead4.json
           dirs=$(node bench/experiments/template-variants.mjs ahead4 ahead4late) || exit 1
           ROUNDS=${AHEAD4_ROUNDS:-3} paged_rows bench-ahead4.json "${AHEAD4_SHAPES:-1x32768x16,8x4096x16,64x4096x16,32x16384x32}" "${AHEAD4_PINS:-[{\}]}" "templates,$dirs" ;;
    variants) # The templates against any template-variants.mjs variants (VARIANTS="a b ..."), on VARIANT_SHAPES
           # (default: the two small decode shapes and 64 x 4096, bs 16), 3 rounds; $OUT/bench-variants.json
           dirs=$(node bench/experiments/template-variants.mjs ${VARIANTS:?VARIANTS names the variants}) || exit 1
           paged_rows bench-variants.json "${VARIANT_SHAPES:-1x32768x16,8x4096x16,64x4096x16}" '[{}]' "templates,$dirs" ;;
    sweep) BENCH_SHAPES=1x4096x16,1x8192x16,1x16384x16,1x32768x16,1x65536x16 BENCH_PINS='[{"SPLIT_TARGET_WORKGROUPS":1024,"MAX_SPLITS":128,"SPLIT_MIN_KEYS":16}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-sweep.json" 2>&1 | grep -v Warning | tee "$OUT/bench-sweep.log" ;;
    fewsplits) BENCH_SHAPES=64x4096x16,64x4096x32,32x16384x16 BENCH_PINS='[{},{"MAX_SPLITS":1},{"MAX_SPLITS":2,"SPLIT_MIN_KEYS":64},{"MAX_SPLITS":3,"SPLIT_MIN_KEYS":64}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-fewsplits.json" 2>&1 | grep -v Warning | tee "$OUT/bench-fewsplits.log" ;;
    regs)  dirs=$(node bench/experiments/template-variants.mjs vsplit) || exit 1
           for d in templates ${dirs//,/ }; do
             for a in 2 1; do
               c=/tmp/glcache-${d#.}-$a; rm -rf "$c"; mkdir -p "$c"
               __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$c __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 \
                 BENCH_TEMPLATES=$d BENCH_PINS="[{\"ROW_LOAD_AHEAD\":$a}]" BENCH_SHAPES=1x4096x16 BENCH_ROUNDS=1 \
                 node bench/gpu/attention.mjs paged --out /tmp/regs.json > /dev/null 2>&1
               python3 bench/experiments/nv-shader-cache.py "$c" > "$OUT/regs-${d#.}-$a.log" 2>&1
               echo "== $d ROW_LOAD_AHEAD=$a"; grep -E "files|REGCOUNT|regs" "$OUT/regs-${d#.}-$a.log" | head -20
             done
           done ;;
    fixed) P='[{"SPLIT_TARGET_WORKGROUPS":1024,"MAX_SPLITS":128,"SPLIT_MIN_KEYS":16}]'
           dirs=$(node bench/experiments/template-variants.mjs noloop) || exit 1
           BENCH_TEMPLATES=templates,$dirs BENCH_SHAPES=1x4096x16,1x32768x16 BENCH_PINS=$P \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-fixed-noloop.json" 2>&1 | grep -v Warning | tee "$OUT/bench-fixed-noloop.log"
           BENCH_DOUBLE_PASS=split_attention BENCH_SHAPES=1x4096x16,1x32768x16,1x65536x16 BENCH_PINS=$P \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-fixed.json" 2>&1 | grep -v Warning | tee "$OUT/bench-fixed.log"
           BENCH_DOUBLE_PASS=split_attention BENCH_SHAPES=64x4096x16 BENCH_PINS='[{}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-fixed-large.json" 2>&1 | grep -v Warning | tee "$OUT/bench-fixed-large.log"
           BENCH_SHAPES=1x512x16 BENCH_PINS='[{"SPLIT_TARGET_WORKGROUPS":128,"MAX_SPLITS":16,"SPLIT_MIN_KEYS":16}]' \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-fixed-few.json" 2>&1 | grep -v Warning | tee "$OUT/bench-fixed-few.log"
           BENCH_PROFILE=mobile-256-f16 BENCH_DOUBLE_PASS=split_attention BENCH_SHAPES=1x4096x16,1x32768x16 BENCH_PINS=$P \
             node bench/gpu/attention.mjs paged --out "$OUT/bench-fixed-kpl.json" 2>&1 | grep -v Warning | tee "$OUT/bench-fixed-kpl.log" ;;
    base)  BENCH_TEMPLATES=.exp-base,templates BENCH_PINS='[{}]' BENCH_SPARSE_PINS='[{}]' \
             node bench/gpu/attention.mjs paged sparse --out "$OUT/bench-base.json" 2>&1 | grep -v Warning | tee "$OUT/bench-base.log" ;;
    plan)  node bench/plan-time.mjs 2>&1 | tee "$OUT/plan.log" ;;
    *) echo "unknown step $what (tests, bench, packed, packedcmp, torch, tune, features, ahead, vearly, occupancy, ahead1, smem, vsched, sweep, fewsplits, regs, fixed, base, plan)"; exit 2 ;;
  esac
done
