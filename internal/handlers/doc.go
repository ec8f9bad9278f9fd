// Package handlers holds the handlers of the drainer, reaper, retention and
// sesevents Lambda functions. The functions' main packages only read the
// environment, wire these handlers to the engine and call lambda.Start; the
// handlers are plain values a test can invoke with the samples in events/.
//
// Each handler depends on a narrow port (Drainer, Reaper, Retainer,
// DeliveryRecorder) that *outbox.Engine satisfies, through EnginePorts for
// the first three, so tests can drive them with fakes and the real engine
// alike.
package handlers
