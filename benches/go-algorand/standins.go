// Stand-ins for the go-algorand types and bounds that data/appRateLimiter.go reads (only the
// fields it reads), so that its code builds outside go-algorand. Not part of txgate.
package main

type AppIndex uint64

type TxType string

const ApplicationCallTx TxType = "appl"

type ResourceRef struct{ App AppIndex }

type Transaction struct {
	Type          TxType
	ApplicationID AppIndex
	ForeignApps   []AppIndex
	Access        []ResourceRef
}

type SignedTxn struct{ Txn Transaction }

// go-algorand's config/bounds values for the current consensus versions.
var (
	MaxTxGroupSize       = 16
	MaxAppTxnForeignApps = 8
	MaxAppAccess         = 16
)

// The builtin `max` of Go 1.21, for this Go 1.19 build.
func max[T int | int64](a, b T) T {
	if a > b {
		return a
	}
	return b
}
