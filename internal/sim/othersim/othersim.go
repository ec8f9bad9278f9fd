//go:build otherbuild

// Package othersim runs another build's engine in the simulator
// (sim.Options.OtherBuild): the packages ferry-othergen wrote under
// internal/sim/otherbuild/ from that build's source (design.md §15). It
// only carries values between the two builds' types, field by field by
// name; what the other engine does is its own code. It is built with the
// tag `otherbuild`, once the packages are there (or placed by `go build
// -overlay`).
//
// It is written against the other build's API as it is today: a release
// that changes the engine's or the adapters' Go API changes this package
// with it (the table and its protocols are what the harness proves).
package othersim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/outbox"
	"github.com/ferryhq/ferry/internal/sim"
	other "github.com/ferryhq/ferry/internal/sim/otherbuild/outbox"
)

var _ sim.OtherBuild = Build

// Build is the other build's engine on the run's table, with the run's
// simulated providers behind its own registry.
func Build(db outbox.DynamoDB, clk clock.Clock, adapters []outbox.Adapter, cfg outbox.Config, rnd *rand.Rand) (sim.Engine, error) {
	reg := other.NewRegistry()
	for _, a := range adapters {
		var wrapped other.Adapter = adapter{a}
		if rb, ok := a.(outbox.ReadBacker); ok {
			wrapped = readBackAdapter{adapter{a}, rb}
		}
		if err := reg.Register(wrapped); err != nil {
			return nil, err
		}
	}
	var ocfg other.Config
	convert(&ocfg, cfg)
	// As this build's engines in the simulator: no wait between an
	// enqueue's refused tries.
	noSleep := func(context.Context, time.Duration) error { return nil }
	e, err := other.New(db, clk, reg, ocfg, other.WithRand(rnd), other.WithSleeper(noSleep))
	if err != nil {
		return nil, err
	}
	return engine{e}, nil
}

// engine is the other build's engine as a sim.Engine.
type engine struct{ e *other.Engine }

func (g engine) EnsureTable(ctx context.Context) error { return fromOther(g.e.EnsureTable(ctx)) }

func (g engine) Enqueue(ctx context.Context, p outbox.EnqueueParams) (*outbox.EnqueueResult, error) {
	var op other.EnqueueParams
	convert(&op, p)
	r, err := g.e.Enqueue(ctx, op)
	return to[outbox.EnqueueResult](r), fromOther(err)
}

func (g engine) Admit(ctx context.Context, id string) (*outbox.Action, error) {
	a, err := g.e.Admit(ctx, id)
	return to[outbox.Action](a), fromOther(err)
}

func (g engine) Cancel(ctx context.Context, id string) (*outbox.Action, error) {
	a, err := g.e.Cancel(ctx, id)
	return to[outbox.Action](a), fromOther(err)
}

func (g engine) EraseSubject(ctx context.Context, ws, subj string) (int, error) {
	n, err := g.e.EraseSubject(ctx, ws, subj)
	return n, fromOther(err)
}

func (g engine) DrainPartition(ctx context.Context, part int, p outbox.DrainParams) (*outbox.DrainResult, error) {
	var op other.DrainParams
	convert(&op, p)
	r, err := g.e.DrainPartition(ctx, part, op)
	return to[outbox.DrainResult](r), fromOther(err)
}

func (g engine) Reap(ctx context.Context) (*outbox.ReapResult, error) {
	r, err := g.e.Reap(ctx)
	return to[outbox.ReapResult](r), fromOther(err)
}

func (g engine) Retain(ctx context.Context) (*outbox.RetainResult, error) {
	r, err := g.e.Retain(ctx)
	return to[outbox.RetainResult](r), fromOther(err)
}

// adapter is one of the run's simulated providers as an adapter of the
// other build.
type adapter struct{ a outbox.Adapter }

func (w adapter) Spec() other.KindSpec {
	var s other.KindSpec
	convert(&s, w.a.Spec())
	return s
}

func (w adapter) Validate(variant string, payload json.RawMessage) error {
	return w.a.Validate(variant, payload)
}

func (w adapter) Execute(ctx context.Context, att *other.Attempt) other.Result {
	return result(w.a.Execute(ctx, to[outbox.Attempt](att)))
}

// readBackAdapter is a read-back provider as the other build's.
type readBackAdapter struct {
	adapter
	rb outbox.ReadBacker
}

func (w readBackAdapter) ReadBack(ctx context.Context, att *other.Attempt) other.Result {
	return result(w.rb.ReadBack(ctx, to[outbox.Attempt](att)))
}

func result(r outbox.Result) other.Result {
	var o other.Result
	convert(&o, r)
	return o
}

// fromOther gives the errors the simulator tells apart this build's type.
func fromOther(err error) error {
	var te *other.TransitionError
	if errors.As(err, &te) {
		return to[outbox.TransitionError](te)
	}
	return err
}

// to converts src, a pointer to a value of the other build (or nil), to
// a pointer to T.
func to[T any](src any) *T {
	v := reflect.ValueOf(src)
	if !v.IsValid() || v.IsNil() {
		return nil
	}
	out := new(T)
	convert(out, v.Elem().Interface())
	return out
}

// convert sets *dst from src, a value of the same shape in the other
// build's types: fields by name (exported ones; a field one side lacks is
// left alone), slices, maps and pointers element by element, named basic
// types by conversion.
func convert(dst, src any) {
	convertValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src))
}

func convertValue(dst, src reflect.Value) {
	if !src.IsValid() {
		return
	}
	if src.Type().AssignableTo(dst.Type()) {
		dst.Set(src)
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		n := reflect.New(dst.Type().Elem())
		convertValue(n.Elem(), src.Elem())
		dst.Set(n)
	case reflect.Struct:
		for i := 0; i < dst.NumField(); i++ {
			if f := dst.Type().Field(i); f.IsExported() {
				convertValue(dst.Field(i), src.FieldByName(f.Name))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		n := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			convertValue(n.Index(i), src.Index(i))
		}
		dst.Set(n)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		n := reflect.MakeMapWithSize(dst.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k, v := reflect.New(dst.Type().Key()).Elem(), reflect.New(dst.Type().Elem()).Elem()
			convertValue(k, it.Key())
			convertValue(v, it.Value())
			n.SetMapIndex(k, v)
		}
		dst.Set(n)
	default:
		if !src.Type().ConvertibleTo(dst.Type()) {
			panic(fmt.Sprintf("othersim: cannot carry a %s into a %s", src.Type(), dst.Type()))
		}
		dst.Set(src.Convert(dst.Type()))
	}
}
