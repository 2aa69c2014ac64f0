// Package strutil is the vendored dependency of the corpus' Go module: no module proxy is needed to build it.
package strutil

import "strings"

// Capitalize returns s with its first letter in upper case.
func Capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
