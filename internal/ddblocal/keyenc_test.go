package ddblocal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal/expr"
)

// randomNumber draws numbers of DynamoDB's range in varied notations.
func randomNumber(r *rand.Rand) string {
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	sign := ""
	if r.IntN(3) == 0 {
		sign = "-"
	}
	switch r.IntN(4) {
	case 0:
		return sign + digits(1+r.IntN(5))
	case 1:
		return sign + digits(1+r.IntN(4)) + "." + digits(1+r.IntN(6))
	case 2:
		return sign + "0.000" + digits(1+r.IntN(3))
	default:
		return sign + digits(1+r.IntN(3)) + "e" + fmt.Sprint(r.IntN(40)-20)
	}
}

// The key encoding of numbers must order like DynamoDB's numeric order and
// the stored text must be DynamoDB's canonical text.
func TestNumberKeyOrderAndCanonicalText(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 5000; i++ {
		a, b := randomNumber(r), randomNumber(r)
		da, err := parseDecimal(a)
		require.NoError(t, err, a)
		db, err := parseDecimal(b)
		require.NoError(t, err, b)
		want, ok := expr.Compare(&types.AttributeValueMemberN{Value: a}, &types.AttributeValueMemberN{Value: b})
		require.True(t, ok)
		got := bytes.Compare(appendKeyNumber(nil, da), appendKeyNumber(nil, db))
		require.Equal(t, want, got, "%s vs %s", a, b)
		canon, err := expr.CanonicalNumber(a)
		require.NoError(t, err)
		require.Equal(t, canon, da.canonical(), a)
	}
}

func TestStringKeyOrder(t *testing.T) {
	t.Parallel()
	vals := []string{"", "\x00", "\x00\x00", "\x00a", "a", "a\x00", "a\x00\x00", "a\x01", "aa", "b", "\xff", "\xff\xff"}
	for i := range vals {
		for j := range vals {
			got := bytes.Compare(appendKeyBytes(nil, []byte(vals[i])), appendKeyBytes(nil, []byte(vals[j])))
			require.Equal(t, bytes.Compare([]byte(vals[i]), []byte(vals[j])), got, "%q vs %q", vals[i], vals[j])
			// Prefix-freedom: a hash key followed by a range key sorts by
			// hash key first.
			hi := append(appendKeyBytes(nil, []byte(vals[i])), appendKeyBytes(nil, []byte("zzz"))...)
			hj := append(appendKeyBytes(nil, []byte(vals[j])), appendKeyBytes(nil, []byte("a"))...)
			if vals[i] < vals[j] {
				require.Negative(t, bytes.Compare(hi, hj), "%q vs %q", vals[i], vals[j])
			}
		}
	}
}

func TestItemCodecRoundTrip(t *testing.T) {
	t.Parallel()
	item := Item{
		"s": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberN{Value: "-1.5"},
		"b": &types.AttributeValueMemberB{Value: []byte{0, 255}}, "t": &types.AttributeValueMemberBOOL{Value: true},
		"f": &types.AttributeValueMemberBOOL{Value: false}, "z": &types.AttributeValueMemberNULL{Value: true},
		"m":  &types.AttributeValueMemberM{Value: Item{"in": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "q"}}}}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
	}
	require.Equal(t, item, decodeItem(encodeItem(nil, item)))
}
