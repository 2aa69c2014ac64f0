// Command goapp serves a greeting over HTTP: the acceptance corpus' Go module (issue 26).
package main

import (
	"fmt"
	"log"
	"net/http"

	"example.org/berth/strutil"
)

// Greeting is what the server answers.
func Greeting(name string) string {
	return "Hello from " + strutil.Capitalize(name)
}

func handler(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintln(w, Greeting("berth"))
}

func main() {
	http.HandleFunc("/", handler)
	log.Fatal(http.ListenAndServe("localhost:8081", nil))
}
