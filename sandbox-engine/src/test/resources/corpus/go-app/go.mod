module example.org/berth/goapp

go 1.19

require example.org/berth/strutil v1.0.0
