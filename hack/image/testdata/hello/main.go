// Command hello stands in for the gate in the image tests: a small static binary.
package main

func main() { println("hello") }
