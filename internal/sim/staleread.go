package sim

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// staleTails makes eventually consistent reads of lane tails stale, as
// DynamoDB's may be (ADR 0017): such a GetItem answers, with the seed's
// probability, the tail as it was at an instant up to the seed's window
// before now (its image then, or none). The engine reads a tail eventually
// consistent only where the write that follows is conditioned on the tail
// as read, or where a consistent read confirms the answer before it is
// acted on. Draws come from a source of their own, so the rest of a seed's
// run is drawn as before.
type staleTails struct {
	rng    *rand.Rand
	rate   float64       // the share of eventually consistent tail reads made stale
	window time.Duration // how far back a stale read may look
	hist   map[string][]tailVersion
}

type tailVersion struct {
	at  time.Time
	img map[string]types.AttributeValue // nil: deleted
}

func newStaleTails(seed uint64) *staleTails {
	r := rand.New(rand.NewPCG(seed, 0x17e7))
	return &staleTails{
		rng:    r,
		rate:   0.5 * r.Float64(),
		window: time.Duration(r.IntN(5001)) * time.Millisecond,
		hist:   map[string][]tailVersion{},
	}
}

// isTailKey tells a lane tail's key: its own item (`L#…`/`L`) or a
// partition's row of an old tail (`P#…`/`L#…`).
func isTailKey(k map[string]types.AttributeValue) bool {
	return strings.HasPrefix(str(k, "pk"), "L#") || strings.HasPrefix(str(k, "sk"), "L#")
}

// observe records a change of a tail.
func (s *staleTails) observe(c ddblocal.Change) {
	if !isTailKey(c.Keys) {
		return
	}
	k := keyName(c.Keys)
	s.hist[k] = append(s.hist[k], tailVersion{at: c.At, img: c.NewImage})
}

// read answers an eventually consistent read of tail key k at now: stale
// says whether it is served from the past, item what it read then.
func (s *staleTails) read(k map[string]types.AttributeValue, now time.Time) (item map[string]types.AttributeValue, stale bool) {
	if s.window <= 0 || s.rng.Float64() >= s.rate {
		return nil, false
	}
	then := now.Add(-time.Duration(s.rng.Int64N(int64(s.window) + 1)))
	h := s.hist[keyName(k)]
	i := len(h) - 1
	for i >= 0 && h[i].at.After(then) {
		i--
	}
	if i == len(h)-1 {
		return nil, false // no change since then: the current item
	}
	if i < 0 {
		return nil, true // the tables start empty: no tail then
	}
	return h[i].img, true
}
