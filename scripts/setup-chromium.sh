#!/usr/bin/env bash
# Makes Debian's Chromium available for the browser test (test/browser), from the system's own apt
# sources: no browser download from anywhere else (playwright-core is pointed at the system binary).
#
# Result: /usr/bin/chromium (Debian package `chromium`). Its WebGPU adapter in the test is
# SwiftShader (software Vulkan, bundled with the package): no GPU is needed.
#
# Idempotent: returns at once when the binary is already there. Quiet: prints one line unless it
# installs. Environment: KERNELC_CHROMIUM names another binary to check instead (it is never
# installed by this script; test/browser reads the same variable).
set -euo pipefail

BIN="${KERNELC_CHROMIUM:-/usr/bin/chromium}"

die() {
  echo "setup-chromium: error: $*" >&2
  exit 1
}

log() {
  echo "setup-chromium: $*"
}

# Prints the version line of the browser, or fails when it does not run.
browser_version() {
  "$BIN" --version 2>/dev/null | head -n 1
}

if [[ -x "$BIN" ]]; then
  version="$(browser_version)" || die "$BIN exists but \`$BIN --version\` fails; reinstall it (apt-get install --reinstall chromium)"
  log "already set up: $BIN ($version)"
  exit 0
fi

[[ -z "${KERNELC_CHROMIUM:-}" ]] \
  || die "KERNELC_CHROMIUM=$KERNELC_CHROMIUM is not an executable file; unset it to install Debian's chromium at /usr/bin/chromium"

command -v apt-get >/dev/null || die "apt-get not found: install Chromium yourself and set KERNELC_CHROMIUM to its binary"

run_as_root() {
  if [[ "$(id -u)" == "0" ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "need root to run: $* (run this script as root, or install the package chromium yourself)"
  fi
}

# The system's own sources; apt-get update first when the package is unknown, once more on failure.
apt_install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium)
if ! apt-cache show chromium >/dev/null 2>&1; then
  log "apt-get update (the package lists do not name chromium)"
  run_as_root apt-get update -q >/dev/null || die "apt-get update failed"
fi
log "installing Debian's chromium with apt-get (once; about 100 MB)"
if ! run_as_root "${apt_install[@]}" >/dev/null; then
  log "apt-get install chromium failed; retrying after apt-get update"
  run_as_root apt-get update -q >/dev/null || die "apt-get update failed"
  run_as_root "${apt_install[@]}" >/dev/null \
    || die "could not install chromium with apt-get (is the Debian main archive in /etc/apt/sources.list.d/?)"
fi
[[ -x "$BIN" ]] || die "the chromium package is installed but $BIN is missing"
version="$(browser_version)" || die "$BIN was installed but \`$BIN --version\` fails"
log "installed $BIN ($version)"
