package tracing_test

// The OTLP exporter's protobufs import google.golang.org/genproto/googleapis/
// {api,rpc}, split out of google.golang.org/genproto, while an old
// genproto (required through go-ethereum's cockroachdb/errors) still holds
// them: without a newer genproto in go.mod the build fails with "ambiguous
// import". go mod tidy drops a requirement that no package imports, so this
// test file imports one: it keeps the pin without linking anything into
// govgate's binary.
import _ "google.golang.org/genproto/protobuf/api"
