module example.com/calc

go 1.21

require example.com/check v0.1.0
