#!/usr/bin/env bash
# Makes Mesa lavapipe (software Vulkan) available to Dawn, without touching the system's apt sources.
#
# Result: .lavapipe/ at the repository root holds mesa-vulkan-drivers (25.x), libdrm2 and
# libdrm-amdgpu1 from the bookworm-backports suite, unpacked with dpkg -x, and
# .lavapipe/lvp_icd.json, a Vulkan ICD manifest whose library_path is the absolute path of the
# unpacked libvulkan_lvp.so. Point the Vulkan loader at it with VK_DRIVER_FILES (test/support/gpu.ts
# does this). The system itself gets only libvulkan1 (the Vulkan loader, plain bookworm) when it
# lacks it, plus any runtime library of the driver that a minimal system lacks (plain bookworm).
#
# Why backports: bookworm's own Mesa (22.3) lacks features Dawn requires
# ("shaderUniform*ArrayDynamicIndexing required"); 25.x works. See docs/runtime.md.
#
# Idempotent: returns at once when the driver and the manifest are already in place.
# Environment: LAVAPIPE_DIR overrides the destination folder (default <repo>/.lavapipe).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${LAVAPIPE_DIR:-$ROOT/.lavapipe}"
ICD_JSON="$DEST/lvp_icd.json"
SYSTEM_SOURCES="/etc/apt/sources.list.d/debian.sources"
MIN_MESA_MAJOR=25
PACKAGES=(mesa-vulkan-drivers libdrm2 libdrm-amdgpu1)

die() {
  echo "setup-lavapipe: error: $*" >&2
  exit 1
}

log() {
  echo "setup-lavapipe: $*"
}

has_vulkan_loader() {
  local ldconfig
  ldconfig="$(command -v ldconfig || echo /sbin/ldconfig)"
  # No `| grep -q`: with pipefail, grep exiting early can fail the pipeline through SIGPIPE.
  [[ "$("$ldconfig" -p 2>/dev/null)" == *"libvulkan.so.1 "* ]]
}

# Prints the shared libraries a library needs that the dynamic linker cannot find.
missing_libs() {
  ldd "$1" 2>/dev/null | awk '/not found/ { print $1 }'
}

# Fast path: everything is already in place.
if [[ -f "$ICD_JSON" ]] && has_vulkan_loader; then
  lib="$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$ICD_JSON")"
  if [[ -n "$lib" && -e "$lib" && -z "$(missing_libs "$lib")" ]]; then
    log "already set up: $ICD_JSON -> $lib"
    exit 0
  fi
fi

command -v apt-get >/dev/null || die "apt-get not found: this script supports Debian bookworm only"
command -v dpkg >/dev/null || die "dpkg not found: this script supports Debian bookworm only"

CODENAME=""
if [[ -r /etc/os-release ]]; then
  # shellcheck disable=SC1091
  CODENAME="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
fi
[[ "$CODENAME" == "bookworm" ]] \
  || die "expected Debian bookworm (VERSION_CODENAME=bookworm in /etc/os-release), found '${CODENAME:-unknown}'"

run_as_root() {
  if [[ "$(id -u)" == "0" ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "need root to run: $* (run this script as root, or install the package yourself)"
  fi
}

# Installs packages from the system's own sources, running apt-get update first when needed.
system_install() {
  local apt_install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@")
  if ! apt-cache show "$@" >/dev/null 2>&1; then
    run_as_root apt-get update -q || die "apt-get update failed"
  fi
  if ! run_as_root "${apt_install[@]}"; then
    log "apt-get install $* failed; retrying after apt-get update"
    run_as_root apt-get update -q || die "apt-get update failed"
    run_as_root "${apt_install[@]}" || die "could not install $*"
  fi
}

# 1. The Vulkan loader, from the system's own sources.
if ! has_vulkan_loader; then
  log "installing libvulkan1 (the Vulkan loader) with apt-get"
  system_install libvulkan1
  has_vulkan_loader || die "libvulkan1 is installed but libvulkan.so.1 is not in the linker cache (try ldconfig)"
fi

# 2. The archive URI and keyring of the system's bookworm stanza (deb822 format): read, not hard-coded.
[[ -r "$SYSTEM_SOURCES" ]] || die "cannot read $SYSTEM_SOURCES (the archive URI and keyring are taken from it)"
ARCHIVE_URI=""
KEYRING=""
read -r ARCHIVE_URI KEYRING < <(awk -v codename="$CODENAME" '
  function flush() {
    if (uri != "" && found && !done) { print uri, key; done = 1 }
    uri = ""; key = ""; found = 0
  }
  /^[[:space:]]*$/ { flush(); next }
  /^[[:space:]]*#/ { next }
  tolower($1) == "uris:" { uri = $2 }
  tolower($1) == "signed-by:" { key = $2 }
  tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == codename) found = 1 }
  END { flush() }
' "$SYSTEM_SOURCES") || true
[[ -n "$ARCHIVE_URI" ]] || die "no stanza with suite '$CODENAME' and a URIs field in $SYSTEM_SOURCES"
[[ -n "$KEYRING" && -r "$KEYRING" ]] \
  || die "the $CODENAME stanza of $SYSTEM_SOURCES has no readable Signed-By keyring file (got '$KEYRING')"

# 3. A private apt state naming only bookworm-backports; the system's sources, lists and caches stay as they are.
SUITE="$CODENAME-backports"
APT_DIR="$DEST/.apt"
DEBS_DIR="$APT_DIR/debs"
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$DEBS_DIR"
SOURCES_FILE="$APT_DIR/backports.list"
echo "deb [signed-by=$KEYRING] $ARCHIVE_URI $SUITE main" > "$SOURCES_FILE"
APT_OPTS=(
  -o "Dir::Etc::sourcelist=$SOURCES_FILE"
  -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$APT_DIR/lists"
  -o "Dir::Cache=$APT_DIR/cache"
  -o "Dir::Cache::archives=$APT_DIR/cache/archives"
  -o "Acquire::Languages=none"
)
# apt drops to the _apt user for downloads, and that user cannot write into a root-owned folder here.
if [[ "$(id -u)" == "0" ]]; then
  APT_OPTS+=(-o "APT::Sandbox::User=root")
fi

log "fetching the $SUITE package lists from $ARCHIVE_URI"
apt-get "${APT_OPTS[@]}" update -q || die "apt-get update of $SUITE failed (sources file: $SOURCES_FILE)"

targets=()
for p in "${PACKAGES[@]}"; do targets+=("$p/$SUITE"); done
log "downloading ${targets[*]}"
rm -f "$DEBS_DIR"/*.deb
(cd "$DEBS_DIR" && apt-get "${APT_OPTS[@]}" download -q "${targets[@]}") \
  || die "apt-get download of ${targets[*]} failed"

mesa_deb="$(find "$DEBS_DIR" -name 'mesa-vulkan-drivers_*.deb' -print -quit)"
[[ -n "$mesa_deb" ]] || die "mesa-vulkan-drivers .deb not found in $DEBS_DIR after download"
mesa_version="$(dpkg-deb -f "$mesa_deb" Version)"
mesa_major="${mesa_version#*:}"
mesa_major="${mesa_major%%.*}"
[[ "$mesa_major" =~ ^[0-9]+$ && "$mesa_major" -ge "$MIN_MESA_MAJOR" ]] \
  || die "mesa-vulkan-drivers from $SUITE is $mesa_version; Dawn needs >= $MIN_MESA_MAJOR"

# 4. Unpack (no install).
for deb in "$DEBS_DIR"/*.deb; do
  dpkg -x "$deb" "$DEST" || die "dpkg -x $deb failed"
done
so="$(find "$DEST/usr" -name 'libvulkan_lvp.so' \( -type f -o -type l \) -print -quit)"
[[ -n "$so" ]] || die "libvulkan_lvp.so not found under $DEST/usr after unpacking $mesa_deb"
so="$(cd "$(dirname "$so")" && pwd)/$(basename "$so")"

# 5. Runtime libraries the driver links that a minimal system may lack (libLLVM, libxcb-*, ...):
#    install the driver's missing Depends from the system's own sources. bookworm's libdrm2 suffices
#    for lavapipe (it never opens a DRM device).
if [[ -n "$(missing_libs "$so")" ]]; then
  need=()
  deps="$(dpkg-deb -f "$mesa_deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g')"
  for dep in $deps; do
    [[ "$dep" == "libdrm-amdgpu1" ]] && continue
    status="$(dpkg-query -W -f='${Status}' "$dep" 2>/dev/null || true)"
    [[ "$status" == *" installed" ]] || need+=("$dep")
  done
  if ((${#need[@]})); then
    log "installing runtime libraries the driver needs: ${need[*]}"
    system_install "${need[@]}"
  fi
  still="$(missing_libs "$so" | tr '\n' ' ')"
  [[ -z "$still" ]] || die "$so still cannot find: $still"
fi

# 6. The ICD manifest, with the shipped api_version and an absolute library_path.
api_version="$(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$DEST/usr/share/vulkan/icd.d/lvp_icd.json" 2>/dev/null || true)"
tmp="$ICD_JSON.tmp"
printf '{\n  "file_format_version": "1.0.0",\n  "ICD": {\n    "library_path": "%s",\n    "api_version": "%s"\n  }\n}\n' \
  "$so" "${api_version:-1.3.0}" > "$tmp"
mv "$tmp" "$ICD_JSON"
rm -rf "$DEBS_DIR" "$APT_DIR/cache"
log "mesa-vulkan-drivers $mesa_version unpacked into $DEST"
log "ICD manifest: $ICD_JSON (library_path $so)"
log "use: VK_DRIVER_FILES=$ICD_JSON XDG_RUNTIME_DIR=\${XDG_RUNTIME_DIR:-/tmp}"
