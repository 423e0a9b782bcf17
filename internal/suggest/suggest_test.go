package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"astro3d-small", "astro3d-large", "btio-c", "beffio", "write", "pwrite", "read"}
	for word, want := range map[string]string{
		"astro3d-smal": "astro3d-small", "astro3d-smlal": "astro3d-small", "ASTRO3D-LARGE": "", "astro3d-large": "",
		"wirte": "write", "btio": "btio-c", "befio": "beffio", "xyz": "", "": "", "astro": "astro3d-small",
		"raed": "read", "completely-different": "",
	} {
		if got := Closest(word, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}
