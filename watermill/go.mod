module github.com/equeue-go/equeue/watermill

go 1.26

require github.com/equeue-go/equeue v0.0.0-00010101000000-000000000000

require (
	github.com/ThreeDotsLabs/watermill v1.5.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/lithammer/shortuuid/v3 v3.0.7 // indirect
	github.com/oklog/ulid v1.3.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)

replace github.com/equeue-go/equeue => ../
