// Package example is the custom kind of docs/adapters.md, compiled and run
// end to end by its tests: "crm_note" adds a note or a task to a contact in
// a CRM that can find an earlier write by a marker, so the kind is
// read-back (exactly once).
//
// It shows every part of the adapter contract: the KindSpec (class and
// payload variants), Validate, Prepare, Execute, ReadBack with a marker,
// and an EndedHook that writes an audit item in the transaction that ends
// the action. NoteService is the CRM's API as the adapter sees it;
// MemoryNotes is an in-memory CRM for the tests and the guide.
package example
