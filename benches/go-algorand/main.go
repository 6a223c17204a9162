// Times go-algorand's own application rate limiter (data/appRateLimiter.go and util/list.go of a
// go-algorand checkout, which run.sh copies beside this file and edits only as it says) on the
// workloads of txgate's criterion rows `ratelimit/group2`, `ratelimit/drop` and
// `ratelimit/group16_5apps`, and prints the median time per operation over the passes. Usage:
// `goalgo [passes]`.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"time"
)

const window = 10 * time.Second
const t0 = int64(1_700_000_000) * int64(time.Second)

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func key(app uint64, origin uint32) keyType {
	var k keyType
	binary.LittleEndian.PutUint64(k[:], splitmix(app<<32^uint64(origin)))
	return k
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	passes := 200
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "usage: goalgo [passes], passes a positive number")
			os.Exit(2)
		}
		passes = n
	}
	// group2: 3,072 groups of two apps in different buckets, one origin each; L = 10.
	const groups = 3072
	r := makeAppRateLimiter(1<<20, 1, window)
	if r.serviceRatePerWindow != 10 {
		panic("L")
	}
	a := uint64(41)
	b := a + 1
	for memhash64(b, r.seed)%numBuckets == memhash64(a, r.seed)%numBuckets {
		b++
	}
	bk := []int{int(memhash64(a, r.seed) % numBuckets), int(memhash64(b, r.seed) % numBuckets)}
	keys := make([][]keyType, groups)
	for i := range keys {
		keys[i] = []keyType{key(a, uint32(i)), key(b, uint32(i))}
	}
	now := t0 + 2*int64(window)
	fill := func(now int64) {
		for i := 0; i < groups; i += 3 {
			for j := 0; j < 10; j++ {
				if r.shouldDropKeys(bk[1:], keys[i][1:], now) {
					panic("fill")
				}
			}
		}
	}
	// Check the workload once: a third dropped.
	fill(now)
	for i := range keys {
		if r.shouldDropKeys(bk, keys[i], now) != (i%3 == 0) {
			panic(fmt.Sprint("group ", i))
		}
	}
	var g2 []float64
	for p := 0; p < passes; p++ {
		now += 2 * int64(window)
		fill(now)
		start := time.Now()
		for i := range keys {
			_ = r.shouldDropKeys(bk, keys[i], now)
		}
		g2 = append(g2, float64(time.Since(start).Nanoseconds())/groups)
	}
	// drop: one key over its limit hit 4,096 times.
	d := makeAppRateLimiter(1<<20, 1, window)
	dk := []keyType{key(51, 0)}
	db := []int{int(memhash64(51, d.seed) % numBuckets)}
	for j := 0; j < 10; j++ {
		if d.shouldDropKeys(db, dk, t0) {
			panic("drop fill")
		}
	}
	if !d.shouldDropKeys(db, dk, t0) {
		panic("drop")
	}
	var dr []float64
	for p := 0; p < passes; p++ {
		start := time.Now()
		for i := 0; i < 4096; i++ {
			_ = d.shouldDropKeys(db, dk, t0)
		}
		dr = append(dr, float64(time.Since(start).Nanoseconds())/4096)
	}
	// group16_5apps: 256 origins, each a group of 16 app calls over apps 11..15, keys derived
	// (blake2b) by go-algorand's own txgroupToKeys; L = 65,530; a new window every pass.
	h := makeAppRateLimiter(1<<20, 6553, window)
	apps16 := []AppIndex{11, 12, 13, 14, 15, 11, 12, 13, 14, 15, 11, 12, 13, 14, 15, 11}
	txgroup := make([]SignedTxn, 16)
	for i, a := range apps16 {
		txgroup[i] = SignedTxn{Txn: Transaction{Type: ApplicationCallTx, ApplicationID: a}}
	}
	origins := make([][]byte, 256)
	for i := range origins {
		origins[i] = binary.LittleEndian.AppendUint32(nil, uint32(i))
	}
	hnow := t0
	var g16 []float64
	for p := 0; p < passes; p++ {
		hnow += 2 * int64(window)
		start := time.Now()
		for _, o := range origins {
			if h.shouldDropAt(txgroup, o, hnow) {
				panic("group16 dropped")
			}
		}
		g16 = append(g16, float64(time.Since(start).Nanoseconds())/256)
	}
	fmt.Printf("go-algorand (%s) group2 %.1f ns/group, drop %.1f ns/check, group16_5apps %.1f ns/group (median of %d passes)\n", runtime.Version(), median(g2), median(dr), median(g16), passes)
}
