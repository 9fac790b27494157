#!/usr/bin/env bash
# Fetches the Debian source packages of the libraries that TriRace links
# statically (Abseil, tinyxml2) into ${TRIRACE_DEPS_DIR:-<repo>/.deps}, at the
# exact version of the installed -dev package, with Debian's patches applied.
#
# Why: Debian ships these as shared libraries, and its static archives are
# not position-independent, so they cannot go into libtrirace.so. A job that
# preloads the shim on a machine without Debian's libabsl would otherwise
# silently run without TriRace. CMake builds the parts it needs from these
# sources with -fPIC and hidden symbols (third_party/).
#
# apt runs with a private state folder: the system's package lists are not
# touched and root is not needed. Idempotent: a source already unpacked at the
# wanted version is kept.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps_dir=${TRIRACE_DEPS_DIR:-$root/.deps}

# folder name -> the installed -dev package whose source is wanted
declare -A wanted=([abseil-cpp]=libabsl-dev [tinyxml2]=libtinyxml2-dev)

todo=()
for dir in "${!wanted[@]}"; do
  pkg=${wanted[$dir]}
  src=$(dpkg-query -W -f='${source:Package}=${source:Version}' "$pkg" 2>/dev/null) || {
    echo "fetch-sources: $pkg is not installed (run scripts/setup-deps.sh)" >&2
    exit 1
  }
  if [ "$(cat "$deps_dir/$dir/.trirace-source" 2>/dev/null)" != "$src" ]; then
    todo+=("$dir:$src")
  fi
done
[ ${#todo[@]} -eq 0 ] && exit 0

apt_dir=$(mktemp -d)
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/work"
# The system's own mirrors, as source entries (deb822 and one-line styles).
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$apt_dir/parts/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && sed -n 's/^deb \(.*\)/deb-src \1/p' "$f" >> "$apt_dir/parts/one-line.list"
done
apt_opts=(-q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/parts"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
echo "fetch-sources: fetching ${todo[*]} into $deps_dir" >&2
apt-get "${apt_opts[@]}" update >/dev/null

mkdir -p "$deps_dir"
for item in "${todo[@]}"; do
  dir=${item%%:*} src=${item#*:}
  (cd "$apt_dir/work" && apt-get "${apt_opts[@]}" source --download-only "$src" >/dev/null)
  rm -rf "${deps_dir:?}/$dir"
  dsc=$(ls "$apt_dir"/work/"${src%%=*}"_*.dsc)
  dpkg-source --no-check -x "$dsc" "$deps_dir/$dir" >/dev/null
  echo "$src" > "$deps_dir/$dir/.trirace-source"
  rm -f "$apt_dir"/work/* "$deps_dir"/*.orig.tar.*
done
