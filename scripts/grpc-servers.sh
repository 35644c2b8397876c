#!/usr/bin/env bash
# Builds the gRPC project's own example servers, which the gRPC tests run on loopback:
#
#   DIR/greeter_server        helloworld/greeter_server (unary SayHello; -port N)
#   DIR/route_guide_server    route_guide/server (ListFeatures streams; -port N)
#
#   scripts/grpc-servers.sh DIR
#
# Through the Go module proxy only. The examples module's go.mod has replace directives, so
# `go install pkg@version` refuses it: the two packages are built from a throwaway wrapper
# module instead (go mod init, go get at the pinned version, go build). Idempotent: DIR/VERSION
# names the pinned version, and a DIR that already holds both servers of that version is left
# as it is. Exit status: 0 when both servers are in DIR, 1 otherwise.
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

if [ -x "$DIR/greeter_server" ] && [ -x "$DIR/route_guide_server" ] &&
    [ "$(cat "$DIR/VERSION" 2>/dev/null)" = "$EXAMPLES@$VERSION" ]; then
    echo "gRPC example servers already in $DIR ($VERSION)" >&2
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(
    cd "$work"
    go mod init scratch >/dev/null 2>&1
    go get "$EXAMPLES/helloworld/greeter_server@$VERSION" "$EXAMPLES/route_guide/server@$VERSION"
    go build -o "$work/greeter_server" "$EXAMPLES/helloworld/greeter_server"
    go build -o "$work/route_guide_server" "$EXAMPLES/route_guide/server"
)
# Moved in only once both built, so a failed build never leaves a half-filled DIR behind.
mv "$work/greeter_server" "$work/route_guide_server" "$DIR/"
echo "$EXAMPLES@$VERSION" >"$DIR/VERSION"
echo "gRPC example servers built into $DIR ($VERSION)" >&2
