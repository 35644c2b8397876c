#!/usr/bin/env bash
# Builds the gRPC project's own example servers, which the gRPC tests run on loopback:
#
#   DIR/greeter_server        helloworld/greeter_server (unary SayHello; -port N)
#   DIR/route_guide_server    route_guide/server (ListFeatures streams; -port N)
#   DIR/tls_echo_server       features/encryption/TLS/server (UnaryEcho over TLS; -port N),
#                             whose certificate, for *.test.example.com, the examples' own CA
#                             signed: DIR/ca_cert.pem is that CA's certificate, and
#                             DIR/echo.proto the service's (features/proto/echo)
#   DIR/reflection_server     features/reflection/server (the greeter and echo services and
#                             server reflection; -port N)
#
#   scripts/grpc-servers.sh DIR
#
# Through the Go module proxy only. The examples module's go.mod has replace directives, so
# `go install pkg@version` refuses it: the packages are built from a throwaway wrapper
# module instead (go mod init, go get at the pinned version, go build). Idempotent: DIR/VERSION
# names the pinned version, and a DIR that already holds all of them at that version is left
# as it is (one that lacks only a data file gets that file, copied from the module cache). Exit status: 0 when all the servers are in DIR, 1 otherwise.
set -euo pipefail

# The examples module has no release tags of its own: a pseudo-version pins its commit (and,
# through its go.mod, google.golang.org/grpc v1.81.1).
EXAMPLES=google.golang.org/grpc/examples
VERSION=v0.0.0-20260825154716-030ee8becb20

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
export PATH="$PATH:/usr/local/go/bin"

SERVERS=(greeter_server route_guide_server tls_echo_server reflection_server)
# The examples' files the tests read beside the servers: module path -> name in DIR.
DATA=("data/x509/ca_cert.pem ca_cert.pem" "features/proto/echo/echo.proto echo.proto")
have_servers() {
    for s in "${SERVERS[@]}"; do [ -x "$DIR/$s" ] || return 1; done
    [ "$(cat "$DIR/VERSION" 2>/dev/null)" = "$EXAMPLES@$VERSION" ]
}
# Copies the data files from the examples module at the pin (downloaded through the proxy if
# the module cache lacks it) into $1.
copy_data() {
    local src
    src="$(go mod download -json "$EXAMPLES@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    for d in "${DATA[@]}"; do
        set -- "$1" $d
        cp "$src/$2" "$1/$3.tmp" && chmod 0644 "$1/$3.tmp" && mv -f "$1/$3.tmp" "$1/$3"
    done
}
if have_servers; then
    for d in "${DATA[@]}"; do
        set -- $d
        [ -f "$DIR/$2" ] || { copy_data "$DIR"; break; }
    done
    echo "gRPC example servers already in $DIR ($VERSION)" >&2
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(
    cd "$work"
    go mod init scratch >/dev/null 2>&1
    go get "$EXAMPLES/helloworld/greeter_server@$VERSION" "$EXAMPLES/route_guide/server@$VERSION" \
        "$EXAMPLES/features/encryption/TLS/server@$VERSION" \
        "$EXAMPLES/features/reflection/server@$VERSION"
    go build -o "$work/greeter_server" "$EXAMPLES/helloworld/greeter_server"
    go build -o "$work/route_guide_server" "$EXAMPLES/route_guide/server"
    # The TLS server reads its key and certificate from the examples' data directory in the
    # module cache, found at run time from its compiled-in source path.
    go build -o "$work/tls_echo_server" "$EXAMPLES/features/encryption/TLS/server"
    go build -o "$work/reflection_server" "$EXAMPLES/features/reflection/server"
)
# Moved in only once all built, so a failed build never leaves a half-filled DIR behind.
for s in "${SERVERS[@]}"; do mv "$work/$s" "$DIR/"; done
copy_data "$DIR"
echo "$EXAMPLES@$VERSION" >"$DIR/VERSION"
echo "gRPC example servers built into $DIR ($VERSION)" >&2
