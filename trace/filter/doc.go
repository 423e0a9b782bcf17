// Package filter chooses events: the path rules of recorders and
// importers (Paths), and the selectors every command shares — a rank list
// ("0-3,8"), an op selector (calls, families, classes), a path filter
// and a time window — with one syntax and one set of error messages.
package filter
