#!/usr/bin/env bash
# Debian's chromium for the review desk's browser test: prints the path of the browser on stdout.
#
#   scripts/chromium.sh          # installs `chromium` with apt-get when missing, then prints e.g. /usr/bin/chromium
#
# The tests drive it headless over the Chrome DevTools Protocol (tests/review/cdp.py); no Python package is needed.
# CHROMIUM may name a browser to use instead. Only the path goes to stdout; progress and errors go to stderr,
# and a browser that cannot be had is exit 1 with one line saying why.
set -euo pipefail

say() { echo "chromium.sh: $*" >&2; }
die() { say "$*"; exit 1; }

find_chromium() {
    local candidate
    for candidate in /usr/bin/chromium chromium chromium-browser; do
        if command -v "$candidate" >/dev/null 2>&1; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

install_chromium() {
    local -a sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        sudo -n true 2>/dev/null \
            || die "chromium is not installed and this user cannot install it: run \`sudo apt-get install -y chromium\`"
        sudo=(sudo -n)
    fi
    command -v apt-get >/dev/null 2>&1 \
        || die "chromium is not installed and there is no apt-get here: install Chromium and set CHROMIUM=/path/to/it"
    say "installing chromium from Debian's packages (apt-get install -y chromium)"
    local -a install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium)
    if ! "${sudo[@]}" "${install[@]}" >&2; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
        "${sudo[@]}" "${install[@]}" >&2 || die "apt-get could not install chromium (see above)"
    fi
}

if [[ -n "${CHROMIUM:-}" ]]; then
    [[ -x "$CHROMIUM" && ! -d "$CHROMIUM" ]] || die "CHROMIUM=$CHROMIUM is not an executable file"
    echo "$CHROMIUM"
    exit 0
fi
if ! path="$(find_chromium)"; then
    install_chromium
    path="$(find_chromium)" || die "chromium was installed but no chromium executable was found"
fi
echo "$path"
