#!/usr/bin/env bash
# Checks the Debian packages listed in .ci/debian-packages for `run` or `test` (test includes
# run). Missing ones are installed when this runs as root with apt-get; otherwise it stops
# with the one command that installs them. Usage: scripts/debian_packages.sh run|test
set -euo pipefail
cd "$(dirname "$0")/.."

want="${1:?usage: $0 run|test}"
case "$want" in run) tags="run" ;; test) tags="run test" ;; *) echo "$0: expected run or test, got '$want'" >&2; exit 2 ;; esac

# Without dpkg (not Debian) there is nothing to check against: say so and carry on.
if ! command -v dpkg-query >/dev/null; then
    echo "debian_packages: no dpkg-query here; make sure the packages in .ci/debian-packages are installed" >&2
    exit 0
fi

missing=()
while read -r package tag _; do
    case "$package" in ''|'#'*) continue ;; esac
    [[ " $tags " == *" $tag "* ]] || continue
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$package")
done < .ci/debian-packages

[[ ${#missing[@]} -eq 0 ]] && exit 0
line="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "debian_packages: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    exit 0
fi
echo "Missing Debian packages for 'make $want': ${missing[*]}" >&2
echo "Install them (as root) with:" >&2
echo "  sudo $line" >&2
exit 1
