package httpapi_test

import (
	"errors"
	"testing"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/httpapi"
)

// FuzzParseDAO feeds DAO definitions to the admin API's parser: it either
// returns a DAO that passes core's check or a client error, never a panic
// or an internal error.
func FuzzParseDAO(f *testing.F) {
	f.Add([]byte(`{"slug":"ens","name":"ENS","chainId":1,"governor":"0x323A76393544d5ecca80cd6ef2A560C6a395b7E3","kind":"oz-governor","startBlock":13533772}`))
	f.Add([]byte(`{"slug":"x","name":"X","chainId":1,"governor":"0x323A76393544d5ecca80cd6ef2A560C6a395b7E3","kind":"governor-alpha","notifyFromBlock":0}`))
	f.Add([]byte(`{"slug":"x","chainId":"1"}`))
	f.Add([]byte(`{"unknown":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := httpapi.ParseDAO(body)
		if err != nil {
			var ce *core.Error
			if !errors.As(err, &ce) || (ce.Code != core.ECodeInvalidJSON && ce.Code != core.ECodeInvalidRequest) {
				t.Fatalf("%q: %v is not a client error", body, err)
			}
			return
		}
		if fe := d.Check(); fe != nil {
			t.Fatalf("%q parsed into a DAO that fails its check: %v", body, fe)
		}
	})
}
