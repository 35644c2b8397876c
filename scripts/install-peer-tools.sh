#!/usr/bin/env bash
# Installs the peer load tools sojourn compares itself with, through ordinary package clients
# only (apt, the Go module proxy, crates.io, PyPI). Idempotent: tools already present are
# skipped.
#
#   scripts/install-peer-tools.sh [TOOL...]     default: all of them
#
# Tools: wrk ab hey k6 fortio vegeta oha locust h2load ghz. wrk2 is in no registry, so it is only
# reported (present on PATH or not).
#
# Exit status: 0 even if optional tools failed; 1 if a tool named on the command line failed
# (or is unknown).
set -u

ALL_TOOLS=(wrk ab hey k6 fortio vegeta oha locust h2load ghz)
GOBIN="${GOBIN:-$HOME/go/bin}"
CARGO_BIN="$HOME/.cargo/bin"
export GOBIN
# Our own lookups must see what we install, whatever the caller's PATH.
export PATH="$PATH:$GOBIN:$CARGO_BIN:/usr/local/go/bin"

declare -A STATUS VERSION
LOG_DIR="$(mktemp -d)"
trap 'rm -rf "$LOG_DIR"' EXIT

have() { command -v "$1" >/dev/null 2>&1 || [ -x "$GOBIN/$1" ] || [ -x "$CARGO_BIN/$1" ]; }

# The first line a tool prints about its version, or "?" (each tool spells the flag differently).
version_of() {
    local out
    case "$1" in
        wrk) out="$(wrk -v 2>&1 | head -n1)" ;;
        wrk2) out="$(wrk2 -v 2>&1 | head -n1)" ;;
        ab) out="$(ab -V 2>&1 | head -n1)" ;;
        # Built from module source, hey, vegeta and ghz carry no version string of their own
        # (ghz says "dev"); the module version is recorded in the binary.
        hey | vegeta | ghz) out="$(go version -m "$(command -v "$1")" 2>/dev/null | awk '$1=="mod"{print $3; exit}')" ;;
        k6) out="$(k6 version 2>&1 | head -n1)" ;;
        fortio) out="$(fortio version 2>&1 | head -n1)" ;;
        oha) out="$(oha --version 2>&1 | head -n1)" ;;
        locust) out="$(locust --version 2>&1 | head -n1)" ;;
        h2load) out="$(h2load --version 2>&1 | head -n1)" ;;
    esac
    echo "${out:-?}"
}

# apt-get update only when the install fails first: the package lists are usually fresh enough.
apt_install() {
    local pkg="$1"
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$pkg" && return 0
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "$pkg"
}

go_install() { go install "$1"; }

# vegeta's module versions cannot be listed through the proxy here, so `go install @latest`
# fails; a pinned `go get` inside a throwaway module works.
vegeta_install() {
    local dir
    dir="$(mktemp -d)"
    (
        cd "$dir" &&
            go mod init scratch &&
            go get github.com/tsenart/vegeta/v12@v12.12.0 &&
            go build -o "$GOBIN/vegeta" github.com/tsenart/vegeta/v12
    )
    local rc=$?
    rm -rf "$dir"
    return $rc
}

install_cmd() {
    case "$1" in
        wrk) apt_install wrk ;;
        ab) apt_install apache2-utils ;;
        hey) go_install github.com/rakyll/hey@latest ;;
        k6) go_install go.k6.io/k6@latest ;;
        # Later fortio versions need a module the proxy refuses.
        fortio) go_install fortio.org/fortio@v1.68.2 ;;
        vegeta) vegeta_install ;;
        oha) cargo install oha --locked ;;
        locust) pip install locust ;;
        # nghttp2's HTTP/2 load tool (sojourn's own servers need its --h1).
        h2load) apt_install nghttp2-client ;;
        # The gRPC load tool; pinned, as the gRPC tests and fixtures were made with it.
        ghz) go_install github.com/bojand/ghz/cmd/ghz@v0.93.0 ;;
    esac
}

install_one() {
    local tool="$1" log="$LOG_DIR/$1.log"
    if have "$tool"; then
        STATUS[$tool]="already present"
    elif install_cmd "$tool" >"$log" 2>&1 && have "$tool"; then
        STATUS[$tool]="installed now"
    else
        STATUS[$tool]="FAILED: $(grep -v '^\s*$' "$log" | tail -n1 | cut -c1-80)"
        echo "--- $tool install log (last lines) ---" >&2
        tail -n 15 "$log" >&2
    fi
    if [[ "${STATUS[$tool]}" != FAILED* ]]; then VERSION[$tool]="$(version_of "$tool")"; fi
}

main() {
    local named=("$@") tools=() tool failed_named=0
    if [ ${#named[@]} -eq 0 ]; then tools=("${ALL_TOOLS[@]}"); else tools=("${named[@]}"); fi
    for tool in "${tools[@]}"; do
        if [ "$tool" = wrk2 ]; then continue; fi
        if [[ ! " ${ALL_TOOLS[*]} " =~ " $tool " ]]; then
            STATUS[$tool]="FAILED: unknown tool (known: ${ALL_TOOLS[*]} wrk2)"
            continue
        fi
        echo "== $tool" >&2
        install_one "$tool"
    done
    # wrk2 has no package anywhere we may reach: report it, never build it.
    if have wrk2; then STATUS[wrk2]="already present"; VERSION[wrk2]="$(version_of wrk2)"; else
        STATUS[wrk2]="not on PATH (in no registry; build it from source yourself)"; fi

    # Any tool named on the command line that failed makes the whole run fail.
    if [ ${#named[@]} -gt 0 ]; then
        for tool in "${named[@]}"; do
            [[ "${STATUS[$tool]:-}" == FAILED* ]] && failed_named=1
        done
    fi
    printf '\n%-8s %-45s %s\n' TOOL STATUS VERSION
    for tool in "${tools[@]}" wrk2; do
        [ -n "${STATUS[$tool]+x}" ] || continue
        printf '%-8s %-45s %s\n' "$tool" "${STATUS[$tool]}" "${VERSION[$tool]:-}"
        unset "STATUS[$tool]" # printed once even if named twice
    done
    echo
    echo "Hint: $GOBIN and $CARGO_BIN must be on PATH to run hey, k6, fortio, vegeta, oha and ghz."
    return $failed_named
}

main "$@"
