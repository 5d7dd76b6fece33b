# Sourced by .ci/run: puts a Go >= 1.21 on PATH for `make test`'s FerretDB build (Makefile,
# `ferretdb`), installing one with apt when the machine has none or an older one (README, "Set up
# and test"). Go >= 1.21 fetches the toolchain FerretDB's go.mod asks for (1.24) from the Go module
# proxy by itself (GOTOOLCHAIN=auto, which the Makefile sets for that build).
#
#   GO_MIN_MINOR    the oldest Go 1.x accepted (21)
#   GO_CANDIDATES   where to look besides PATH (Go's own install directory, Debian's versioned packages)
#   APT_GET         the apt-get command (e.g. `echo apt-get` to see what would be installed)

# Safe under .ci/run's `set -euo pipefail`: no command here fails the script unless ensure_go does.

# Debian's versioned Go packages (/usr/lib/go-1.N/bin/go), newest first.
debian_gos() {
  local go
  for go in /usr/lib/go-1.*/bin/go; do
    if [ -x "$go" ]; then echo "$go"; fi
  done | sort -rV
}

GO_MIN_MINOR="${GO_MIN_MINOR:-21}"
GO_CANDIDATES="${GO_CANDIDATES-/usr/local/go/bin/go $(debian_gos)}"
APT_GET="${APT_GET:-apt-get}"

# Whether a version `1.22.3`, `go1.22.3`, `2:1.22~2` (a Debian version) or `go1.21rc2` is >= 1.GO_MIN_MINOR.
go_version_ok() {
  local v="${1#*:}"
  v="${v#go}"
  local major="${v%%.*}" rest="${v#*.}"
  local minor="${rest%%[!0-9]*}"
  case "$major" in ''|*[!0-9]*) return 1 ;; esac
  [ -n "$minor" ] || return 1
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge "$GO_MIN_MINOR" ]; }
}

# The first usable `go`: PATH's, then GO_CANDIDATES; prints its path.
find_go() {
  local go
  for go in "$(command -v go 2>/dev/null)" $GO_CANDIDATES; do
    [ -n "$go" ] && [ -x "$go" ] || continue
    if go_version_ok "$("$go" env GOVERSION 2>/dev/null)"; then
      echo "$go"
      return 0
    fi
    echo "go.sh: $go is $("$go" env GOVERSION 2>/dev/null || echo 'of an unknown version'), older than 1.$GO_MIN_MINOR" >&2
  done
  return 1
}

# The apt package that brings a Go >= 1.GO_MIN_MINOR: golang-go where it is new enough (Ubuntu 24.04:
# 1.22), else a versioned golang-1.N (Debian 12: from bookworm-backports, added when missing).
apt_go_package() {
  local pkg candidate
  for pkg in golang-go golang-1.24 golang-1.23 golang-1.22 golang-1.21; do
    candidate="$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')"
    case "$candidate" in ''|'(none)') continue ;; esac
    pkg_version="${candidate#*:}"
    [ "${pkg#golang-1.}" != "$pkg" ] && pkg_version="${pkg#golang-}"
    if go_version_ok "$pkg_version"; then
      echo "$pkg"
      return 0
    fi
  done
  return 1
}

install_go() {
  $APT_GET update -qq
  local pkg
  if ! pkg="$(apt_go_package)"; then
    # shellcheck disable=SC1091
    . /etc/os-release
    if [ "${ID:-}" = debian ] && [ -n "${VERSION_CODENAME:-}" ]; then
      echo "go.sh: adding Debian's ${VERSION_CODENAME}-backports for a newer Go" >&2
      if [ "$APT_GET" = apt-get ]; then
        echo "deb http://deb.debian.org/debian ${VERSION_CODENAME}-backports main" \
          > "/etc/apt/sources.list.d/${VERSION_CODENAME}-backports.list"
      fi
      $APT_GET update -qq
      pkg="$(apt_go_package)" || pkg=golang-1.23
    else
      echo "go.sh: no Go >= 1.$GO_MIN_MINOR in apt; install one from https://go.dev/dl/" >&2
      return 1
    fi
  fi
  echo "go.sh: installing $pkg" >&2
  DEBIAN_FRONTEND=noninteractive $APT_GET install -y -qq "$pkg" >/dev/null
}

# Put a Go >= 1.GO_MIN_MINOR first on PATH, installing one when needed.
ensure_go() {
  local go
  if ! go="$(find_go)"; then
    install_go || return 1
    GO_CANDIDATES="/usr/local/go/bin/go $(debian_gos)"
    go="$(find_go)" || { echo "go.sh: still no Go >= 1.$GO_MIN_MINOR after installing one" >&2; return 1; }
  fi
  export PATH="$(dirname "$go"):$PATH"
  echo "go.sh: $go ($("$go" env GOVERSION))" >&2
}
