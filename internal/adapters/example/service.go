package example

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Note is what the CRM stores.
type Note struct {
	ContactID string
	Text      string
	Due       time.Time // zero for a plain note
	// Marker is Ferry's mark on the note (derived from the action id): the
	// CRM stores it and can search by it, which is what makes read-back
	// possible.
	Marker string
}

// NoteService is the CRM's API as the adapter uses it.
type NoteService interface {
	// ContactActive reports whether the contact still exists and accepts
	// notes.
	ContactActive(ctx context.Context, contactID string) (bool, error)
	// CreateNote stores a note and returns its id.
	CreateNote(ctx context.Context, n Note) (string, error)
	// FindNote returns the id of the contact's note carrying marker.
	FindNote(ctx context.Context, contactID, marker string) (id string, found bool, err error)
}

// ProviderError is an error answer of the CRM.
type ProviderError struct {
	Status     int           // HTTP-like status: 4xx refused, 429 throttled, 5xx failed
	RetryAfter time.Duration // with 429
}

func (e *ProviderError) Error() string { return fmt.Sprintf("crm answered %d", e.Status) }

// MemoryNotes is an in-memory NoteService. Faults can be armed to play the
// provider's bad days.
type MemoryNotes struct {
	mu       sync.Mutex
	contacts map[string]bool
	notes    map[string]Note
	creates  int
	// LoseNextResponse makes the next CreateNote store the note and then
	// fail as if the answer were lost on the way back.
	LoseNextResponse bool
}

// NewMemoryNotes returns a CRM with the given active contacts.
func NewMemoryNotes(contacts ...string) *MemoryNotes {
	m := &MemoryNotes{contacts: map[string]bool{}, notes: map[string]Note{}}
	for _, c := range contacts {
		m.contacts[c] = true
	}
	return m
}

// RemoveContact deletes a contact (later notes are refused).
func (m *MemoryNotes) RemoveContact(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.contacts, id)
}

// ContactActive implements NoteService.
func (m *MemoryNotes) ContactActive(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.contacts[id], nil
}

// CreateNote implements NoteService.
func (m *MemoryNotes) CreateNote(_ context.Context, n Note) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.contacts[n.ContactID] {
		return "", &ProviderError{Status: 404}
	}
	m.creates++
	id := "note-" + strconv.Itoa(m.creates)
	m.notes[id] = n
	if m.LoseNextResponse {
		m.LoseNextResponse = false
		return "", &ProviderError{Status: 504}
	}
	return id, nil
}

// FindNote implements NoteService.
func (m *MemoryNotes) FindNote(_ context.Context, contactID, marker string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, n := range m.notes {
		if n.ContactID == contactID && n.Marker == marker {
			return id, true, nil
		}
	}
	return "", false, nil
}

// Notes returns how many notes the CRM holds.
func (m *MemoryNotes) Notes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.notes)
}
