#!/usr/bin/env bash
# Prepares .device/ (ignored by git), what a GPU run on the device machine carries: this machine's
# node binary, node_modules without webgpu's per-platform binaries, Dawn's linux-x64 binary, the
# Vulkan/GL loader packages the device machine lacks, and the PyTorch anchor script.
# Then: carry [".device/node.xz", ".device/nm.tar.xz", ".device/dawn.node.xz", ".device/gl",
#        ".device/torch_decode_anchor.py", "dist"] and run `bash scripts/device-run.sh ...` there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device/gl
[ -f .device/node.xz ] || xz -T2 -6 -c "$(command -v node)" > .device/node.xz
# Left out too: packages no device step uses (mutation testing, formatting, the browser test's driver),
# which keep the carried tree under the device tool's 64 MiB.
tar --exclude='node_modules/webgpu/dist' --exclude='node_modules/@stryker-mutator' --exclude='node_modules/prettier' \
  --exclude='node_modules/playwright-core' -cf - node_modules | xz -T2 -6 > .device/nm.tar.xz
xz -T2 -c node_modules/webgpu/dist/linux-x64/dawn.node > .device/dawn.node.xz
if ! ls .device/gl/*.deb >/dev/null 2>&1; then
  lists=$(mktemp -d)
  mkdir -p "$lists/partial"
  o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
  apt-get $o update >/dev/null
  (cd .device/gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
if [ -f ../shared/tools/torch_decode_anchor.py ]; then cp ../shared/tools/torch_decode_anchor.py .device/; fi
npx tsc -p tsconfig.json
du -sh .device
