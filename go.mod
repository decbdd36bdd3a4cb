module github.com/deltakit/deltakit

go 1.26
