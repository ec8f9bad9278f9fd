// Package email is the adapter of the built-in "email" kind, sent through
// Amazon SES v2 (SendEmail), and a local mail sink for ferry dev.
//
// Email is at most once: SES neither deduplicates nor lets Ferry find an
// earlier send, so once the write fence is set the action is never sent
// again. The adapter therefore disables the SDK's own retries and answers
// Retry only for a failure proven to have happened before the request left
// the machine; every other failure after the fence is Uncertain. The message
// is prepared again before every attempt, so a recipient who unsubscribed in
// the meantime is dropped, and the action id travels as an SES message tag
// (SES replaces any Message-ID Ferry would set) so delivery events can be
// matched to the action.
package email
