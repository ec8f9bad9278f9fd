package outbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Registry holds the adapters of this build: exactly one per kind. It is safe
// for concurrent use; register kinds before starting the engine.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]Adapter
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]Adapter{}} }

// Register adds an adapter. It refuses a second adapter for the same kind and
// a spec that does not hold together.
func (r *Registry) Register(a Adapter) error {
	if a == nil {
		return fmt.Errorf("outbox: register: nil adapter")
	}
	s := a.Spec()
	if err := s.validate(); err != nil {
		return fmt.Errorf("outbox: register kind %q: %w", s.Name, err)
	}
	if _, ok := a.(ReadBacker); s.Class == ReadBack && !ok {
		return fmt.Errorf("outbox: register kind %q: a read-back kind's adapter must implement ReadBacker", s.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[s.Name]; dup {
		return fmt.Errorf("outbox: register kind %q: an adapter is already registered for it", s.Name)
	}
	r.kinds[s.Name] = a
	return nil
}

// Lookup returns the adapter of a kind.
func (r *Registry) Lookup(kind string) (Adapter, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.kinds[kind]
	return a, ok
}

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.kinds))
	for k := range r.kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Decodes reports whether this build can carry out a row of this kind and
// variant. Rows it cannot decode are left alone (rolling upgrades).
func (r *Registry) Decodes(kind, variant string) (Adapter, bool) {
	a, ok := r.Lookup(kind)
	if !ok {
		return nil, false
	}
	s := a.Spec()
	if s.VariantMode == SingleShape {
		return a, variant == ""
	}
	return a, slices.Contains(s.Variants, variant)
}

func (s KindSpec) validate() error {
	if s.Name == "" || strings.ContainsAny(s.Name, "#\x00") {
		return fmt.Errorf("kind name must be non-empty and contain no '#'")
	}
	switch s.Class {
	case ReadBack, IdempotentReceiver, AtMostOnce:
	default:
		return fmt.Errorf("delivery class %d is not one of ReadBack, IdempotentReceiver, AtMostOnce", s.Class)
	}
	switch s.VariantMode {
	case SingleShape:
		if len(s.Variants) > 0 {
			return fmt.Errorf("a single-shape kind declares no variants")
		}
	case TaggedShape:
		if s.TagProperty == "" {
			return fmt.Errorf("a tagged-shape kind needs TagProperty")
		}
		if len(s.Variants) == 0 {
			return fmt.Errorf("a tagged-shape kind needs Variants")
		}
	case KeySuffix:
		if len(s.Variants) == 0 {
			return fmt.Errorf("a key-suffix kind needs Variants")
		}
	default:
		return fmt.Errorf("variant mode %d is unknown", s.VariantMode)
	}
	if s.Retention < 0 {
		return fmt.Errorf("retention must not be negative")
	}
	return nil
}

// variantOf picks the payload variant of an enqueue according to the kind's
// spec. The error is a *PayloadError or a *ValidationError.
func variantOf(s KindSpec, payload json.RawMessage, idempotencyKey string) (string, error) {
	switch s.VariantMode {
	case TaggedShape:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(payload, &obj); err != nil {
			return "", &PayloadError{Message: "payload must be a JSON object"}
		}
		raw, ok := obj[s.TagProperty]
		var v string
		if !ok || json.Unmarshal(raw, &v) != nil || v == "" {
			return "", &PayloadError{Field: s.TagProperty, Message: "must be a non-empty string naming the variant"}
		}
		if !slices.Contains(s.Variants, v) {
			return "", &PayloadError{Field: s.TagProperty, Message: fmt.Sprintf("variant %q is not one of %s", v, strings.Join(s.Variants, ", "))}
		}
		return v, nil
	case KeySuffix:
		sep := s.KeySeparator
		if sep == "" {
			sep = ":"
		}
		i := strings.LastIndex(idempotencyKey, sep)
		if idempotencyKey == "" || i < 0 {
			return "", &ValidationError{Field: "idempotency_key", Message: fmt.Sprintf("kind %s needs an idempotency key whose last %q-separated segment names the variant", s.Name, sep)}
		}
		v := idempotencyKey[i+len(sep):]
		if !slices.Contains(s.Variants, v) {
			return "", &ValidationError{Field: "idempotency_key", Message: fmt.Sprintf("variant %q is not one of %s", v, strings.Join(s.Variants, ", "))}
		}
		return v, nil
	}
	return "", nil
}
