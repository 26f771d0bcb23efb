package main

import (
	"os"
	"strings"
	"testing"
)

// The README's table of controls is `bulkhead controls --format markdown`,
// so documentation and code cannot drift apart.
func TestREADMEHasTheControlsTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := controlsMarkdown(); !strings.Contains(string(readme), table) {
		t.Fatalf("README.md does not contain the table of controls; paste the output of `bulkhead controls --format markdown`:\n%s", table)
	}
}

// docs/fields.md holds `bulkhead controls --fields --format markdown`.
func TestFieldsDocument(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fields.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := fieldsMarkdown(); !strings.Contains(string(doc), table) {
		t.Fatalf("docs/fields.md does not contain the classification; paste the output of `bulkhead controls --fields --format markdown`:\n%s", table)
	}
}

func TestPrintControls(t *testing.T) {
	for _, format := range []string{"text", "markdown", "json"} {
		var b strings.Builder
		if err := printControls(&b, format); err != nil || !strings.Contains(b.String(), "seccomp") {
			t.Errorf("format %s: %v\n%s", format, err, b.String())
		}
	}
	for _, format := range []string{"text", "markdown", "json"} {
		var b strings.Builder
		if err := printFields(&b, format); err != nil || !strings.Contains(b.String(), "linux.intelRdt") {
			t.Errorf("fields, format %s: %v\n%s", format, err, b.String())
		}
	}
	if err := printControls(&strings.Builder{}, "yaml"); err == nil {
		t.Error("an unknown format printed")
	}
}
