package schema

import "testing"

// TestLookupField: the switch of LookupBytes agrees with the table.
func TestLookupField(t *testing.T) {
	for f := range NumFields {
		if g, ok := LookupBytes([]byte(f.String())); !ok || g != f {
			t.Errorf("LookupBytes(%q) = %v, %v", f, g, ok)
		}
		if g, ok := LookupField(f.String()); !ok || g != f {
			t.Errorf("LookupField(%q) = %v, %v", f, g, ok)
		}
	}
	if _, ok := LookupBytes([]byte("sise")); ok {
		t.Error("sise is a field")
	}
}
