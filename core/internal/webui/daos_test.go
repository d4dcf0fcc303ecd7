package webui

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/dev/daoadmin"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// checkDeadGovernor is the admin page tests' check of a DAO against its
// chain: a governor at 0x…dEaD holds no code (TestBrowserDAOs probes the
// dev chain as govgate does).
func checkDeadGovernor(_ context.Context, d core.DAO) error {
	if strings.EqualFold(d.Governor, "0x000000000000000000000000000000000000dEaD") {
		return httpapi.FieldErr(&core.FieldError{Field: "governor", Message: "no contract at " + d.Governor + " on chain 1"})
	}
	return nil
}

// TestDAOForms adds, changes and removes a DAO on the admin page: a
// refused form comes back filled in with the error under its field.
func TestDAOForms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st := storetest.Open(t, storetest.SQLite.NewDatabase(t), box, store.Options{Logger: slog.New(slog.DiscardHandler)})
	var err error
	if err := st.SeedDAOs(ctx, testDAOs[:1]); err != nil {
		t.Fatal(err)
	}
	daos := daoadmin.New(st, checkDeadGovernor)
	daos.Reload(ctx)
	s := &stack{st: st}
	admin := httpapi.NewAdmin(httpapi.AdminConfig{Store: st, DAOs: daos.Catalog, DAOAdmin: daos, Token: testToken, Logger: slog.New(slog.DiscardHandler),
		UI:         http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.ui.ServeHTTP(w, r) }),
		Authorized: func(r *http.Request) bool { return s.ui.Authorized(r) }})
	if s.ui, err = New(Config{API: admin, Token: testToken}); err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(admin)
	defer s.srv.Close()
	c, csrf := signIn(t, s)
	post := func(path string, form url.Values) (int, string) {
		t.Helper()
		form.Set("csrf", csrf)
		resp, body := send(t, c, "POST", s.srv.URL+path, form)
		if resp.StatusCode == http.StatusSeeOther {
			_, body = send(t, c, "GET", s.srv.URL+resp.Header.Get("Location"), nil)
		}
		return resp.StatusCode, body
	}
	form := func(kv ...string) url.Values {
		v := url.Values{"slug": {"added"}, "name": {"Added"}, "chainId": {"1"}, "governor": {"0x408ED6354d4973f66138C91495F2f2FCbd8724C3"}, "kind": {"oz-governor"}, "startBlock": {"5"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}

	_, page := send(t, c, "GET", s.srv.URL+"/admin/ui/daos", nil)
	if !strings.Contains(page, "uniswap") || !strings.Contains(page, "the configuration file") || strings.Contains(page, `action="/admin/ui/daos/uniswap/delete"`) {
		t.Fatalf("the file's DAO is not listed read-only:\n%s", page)
	}
	for _, tc := range []struct {
		name, field, value, id, says string
	}{
		{"not an address", "governor", "0x12", "governor-new-error", "want a 0x-prefixed 20-byte hex address"},
		{"no code", "governor", "0x000000000000000000000000000000000000dEaD", "governor-new-error", "no contract at"},
		{"a bad slug", "slug", "Not A Slug", "slug-new-error", "lowercase letters"},
		{"a start block in words", "startBlock", "five", "startBlock-new-error", "Write a whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post("/admin/ui/daos", form(tc.field, tc.value))
			if status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d", status)
			}
			i := strings.Index(body, `id="`+tc.id+`"`)
			if i < 0 || !strings.Contains(body[i:min(len(body), i+300)], tc.says) {
				t.Fatalf("no %q under the field (%s):\n%s", tc.says, tc.id, body)
			}
			if !strings.Contains(body, `value="`+tc.value+`"`) {
				t.Fatalf("the form lost what was typed:\n%s", body)
			}
		})
	}
	if status, body := post("/admin/ui/daos", form()); status != http.StatusSeeOther || !strings.Contains(body, "DAO added added") {
		t.Fatalf("add: %d\n%s", status, body)
	}
	if d, ok := daos.Catalog.DAO("added"); !ok || d.Source != core.DAOSourceAPI {
		t.Fatalf("the catalog has %+v", d)
	}
	if status, body := post("/admin/ui/daos/added", form("name", "Renamed")); status != http.StatusSeeOther || !strings.Contains(body, "Renamed") {
		t.Fatalf("change: %d\n%s", status, body)
	}
	status, body := post("/admin/ui/daos/added", form("kind", "alpha"))
	if i := strings.Index(body, `id="kind-added-error"`); status != http.StatusUnprocessableEntity || i < 0 || !strings.Contains(body[i:], "want oz-governor") || !strings.Contains(body, `<details class="dao-edit" open>`) {
		t.Fatalf("a refused change: %d\n%s", status, body)
	}
	if status, body := post("/admin/ui/daos/added/delete", url.Values{}); status != http.StatusSeeOther || !strings.Contains(body, "removed") || strings.Contains(body, `data-dao="added"`) {
		t.Fatalf("remove: %d\n%s", status, body)
	}
}
