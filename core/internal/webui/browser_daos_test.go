package webui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/govgate/govgate/core/internal/dev/storetest"

	"github.com/chromedp/chromedp"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/chain"
	"github.com/govgate/govgate/core/internal/dev/daoadmin"
	"github.com/govgate/govgate/core/internal/dev/devchain"
	"github.com/govgate/govgate/core/internal/httpapi"
	"github.com/govgate/govgate/core/internal/indexer"
	"github.com/govgate/govgate/core/internal/secrets"
	"github.com/govgate/govgate/core/internal/store"
)

// noCode is an address that holds no code on the dev chain.
const noCode = "0x000000000000000000000000000000000000dEaD"

// probeDevChain checks a DAO as govgate does before the admin API stores
// it (core/cmd/govgate's chainService.check): its chain must be the dev
// chain, and indexer.Probe must find its governor, of its kind, and its
// voting token there.
func probeDevChain(gw *chain.Gateway) func(context.Context, core.DAO) error {
	return func(ctx context.Context, d core.DAO) error {
		if d.ChainID != devchain.ChainID {
			return httpapi.FieldErr(&core.FieldError{Field: "chain_id", Message: fmt.Sprintf("no chain %d is configured (chains[] in the configuration file)", d.ChainID)})
		}
		_, err := indexer.Probe(ctx, gw, d)
		if pe := (*indexer.ProbeError)(nil); errors.As(err, &pe) {
			return httpapi.FieldErr(&core.FieldError{Field: pe.Field, Message: pe.Message})
		}
		return err
	}
}

// TestBrowserDAOs goes through the DAOs page in Chromium against the real
// admin API on a real store, each DAO checked against the dev chain by the
// indexer's own probe: the configuration file's DAO is listed read-only
// (and the admin API refuses to remove it all the same); an add with a bad
// slug, a governor without code and a governor of another kind comes back
// with the error under its field and what was typed kept; a good one is
// added, changed (a refused change reopens its form with the error) and
// removed after a confirmation. With GOVGATE_SCREENSHOTS=1 it takes
// docs/screenshots/daos.png.
func TestBrowserDAOs(t *testing.T) {
	tb := newTab(t)
	ctx := context.Background()
	c, err := devchain.Start(ctx, devchain.Options{Accounts: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	gw, err := chain.New(c.ChainConfig(), chain.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	box, _ := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	st := storetest.Open(t, storetest.SQLite.NewDatabase(t), box, store.Options{Logger: slog.New(slog.DiscardHandler)})
	filed := c.Bravo.DAO()
	filed.Name = "Bravo-style DAO"
	if err := st.SeedDAOs(ctx, []core.DAO{filed}); err != nil {
		t.Fatal(err)
	}
	daos := daoadmin.New(st, probeDevChain(gw))
	if err := daos.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	var ui *UI
	admin := httpapi.NewAdmin(httpapi.AdminConfig{Store: st, DAOs: daos.Catalog, DAOAdmin: daos, Token: testToken, Logger: slog.New(slog.DiscardHandler),
		UI:         http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ui.ServeHTTP(w, r) }),
		Authorized: func(r *http.Request) bool { return ui.Authorized(r) }})
	if ui, err = New(Config{API: admin, Token: testToken}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(admin)
	t.Cleanup(srv.Close)
	shots := tb.screenshots()
	tb.signIn(srv.URL, testToken)
	rows := func() []string {
		return evaluate[[]string](tb, `[...document.querySelectorAll("#daos-table tbody tr")].map((tr) => tr.dataset.dao)`)
	}
	// fill sets fields of the form whose field ids end in -id, as typed.
	fill := func(id string, kv ...string) {
		t.Helper()
		for i := 0; i+1 < len(kv); i += 2 {
			js := fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; return e.value; })()`, kv[i]+"-"+id, kv[i+1])
			if v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](js)); err != nil || v != kv[i+1] {
				t.Fatalf("set %s of form %s to %q: got %q (%v)", kv[i], id, kv[i+1], v, err)
			}
		}
	}
	// submit sends a form and waits for the page that answers it: a new
	// document, not the one that sent it.
	submit := func(id string) {
		t.Helper()
		tb.do("submit "+id, chromedp.Evaluate[chromedp.Void](`document.body.appendChild(Object.assign(document.createElement("i"), {id: "sent"}))`),
			chromedp.Click(chromedp.CSS(`#dao-form-`+id+` button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.ID("sent")),
			chromedp.WaitVisible(chromedp.CSS("#add-title")))
	}
	// refusedUnder checks that the form shows says under field, the field
	// marked invalid, and nothing else refused.
	refusedUnder := func(id, field, says string) {
		t.Helper()
		tb.wantText("#"+field+"-"+id+"-error", says)
		got := evaluate[[]string](tb, `[document.getElementById("`+field+`-`+id+`").getAttribute("aria-invalid") || "",
			document.getElementById("`+field+`-`+id+`").getAttribute("aria-describedby") || "",
			String(document.querySelectorAll("#dao-form-`+id+` .error-text").length)]`)
		if !slices.Equal(got, []string{"true", field + "-" + id + "-error", "1"}) {
			t.Fatalf("the refused %s field: aria-invalid, aria-describedby, errors in the form = %q", field, got)
		}
	}
	value := func(css string) string {
		t.Helper()
		v, err := chromedp.Run(tb.ctx, chromedp.Value(chromedp.CSS(css)))
		if err != nil {
			t.Fatalf("value of %s: %v", css, err)
		}
		return v
	}

	// The list: the file's DAO, read-only.
	tb.do("DAOs", chromedp.Click(chromedp.CSS(`nav[aria-label="Main"] a[href="/admin/ui/daos"]`)), chromedp.WaitVisible(chromedp.ID("daos-table")))
	tb.wantText(`nav[aria-label="Main"] [aria-current="page"]`, "DAOs")
	tb.wantText(`tr[data-dao="dev-bravo"]`, "Bravo-style DAO", "dev-bravo", c.Bravo.Governor.Hex(), "governor-bravo", "1337", "the configuration file")
	if got := evaluate[[]string](tb, `[...document.querySelectorAll('tr[data-dao="dev-bravo"] form, tr[data-dao="dev-bravo"] details, tr[data-dao="dev-bravo"] button')].map((e) => e.outerHTML)`); len(got) != 0 {
		t.Fatalf("the file's DAO can be changed on the page: %q", got)
	}

	// Refused adds: the error under its field, what was typed kept.
	oz := c.OZ.DAO()
	start := fmt.Sprint(oz.StartBlock)
	fill("new", "slug", "Dev OZ", "name", "OpenZeppelin DAO", "chainId", "1337", "governor", oz.Governor, "kind", "oz-governor", "startBlock", start)
	submit("new")
	refusedUnder("new", "slug", "want lowercase letters, digits and hyphens")
	if v := value("#governor-new"); v != oz.Governor {
		t.Fatalf("the refused form lost the governor: %q", v)
	}
	fill("new", "slug", "dev-oz", "governor", noCode)
	submit("new")
	refusedUnder("new", "governor", "no contract at "+noCode+" on chain 1337")
	fill("new", "governor", oz.Governor, "kind", "governor-bravo")
	submit("new")
	refusedUnder("new", "kind", "does not answer as governor-bravo")
	fill("new", "kind", "oz-governor", "chainId", "5")
	submit("new")
	refusedUnder("new", "chainId", "no chain 5 is configured")
	if got := rows(); !slices.Equal(got, []string{"dev-bravo"}) {
		t.Fatalf("a refused DAO was stored: %v", got)
	}

	// Added.
	fill("new", "chainId", "1337")
	submit("new")
	tb.wantText("#flash", "DAO dev-oz added")
	if got := rows(); !slices.Equal(got, []string{"dev-bravo", "dev-oz"}) {
		t.Fatalf("after the add: %v", got)
	}
	tb.wantText(`tr[data-dao="dev-oz"]`, "OpenZeppelin DAO", oz.Governor, "oz-governor", "from block "+start, "the admin API")
	if d, ok := daos.Catalog.DAO("dev-oz"); !ok || d.Source != core.DAOSourceAPI || d.Governor != oz.Governor {
		t.Fatalf("the catalog has %+v", d)
	}
	if v := value("#slug-new"); v != "" {
		t.Fatalf("the add form still holds %q after the add", v)
	}
	// The decoded actions' list style stays on proposals: the tables' action
	// cells are table cells.
	if got := evaluate[[]string](tb, `[...document.querySelectorAll("#daos-table td.actions")].map((td) => getComputedStyle(td).display + " " + getComputedStyle(td).paddingLeft)`); len(got) != 2 || got[0] != got[1] || !strings.HasPrefix(got[0], "table-cell ") {
		t.Fatalf("the action cells are laid out as %q", got)
	}

	// A refused add, for the picture: the list with both sources, and the
	// error under the governor.
	fill("new", "slug", "treasury", "name", "Treasury", "chainId", "1337", "governor", noCode, "kind", "oz-governor")
	submit("new")
	refusedUnder("new", "governor", "no contract at")
	// A long address in an error wraps in its column: nothing is wider
	// than the window.
	if wide := evaluate[[]string](tb, `[String(document.documentElement.scrollWidth <= window.innerWidth)]`); wide[0] != "true" {
		t.Fatal("the refused form is wider than the window")
	}
	if shots {
		tb.shot("daos")
	}

	// Changed: the name at once; a governor without code refused, the
	// change form open again with the error.
	tb.do("open the change form", chromedp.Click(chromedp.CSS(`tr[data-dao="dev-oz"] details.dao-edit summary`)), chromedp.WaitVisible(chromedp.ID("dao-form-dev-oz")))
	if v := evaluate[[]string](tb, `[document.getElementById("slug-dev-oz").readOnly ? "readonly" : "editable", document.getElementById("governor-dev-oz").value]`); !slices.Equal(v, []string{"readonly", oz.Governor}) {
		t.Fatalf("the change form: %q", v)
	}
	fill("dev-oz", "name", "OpenZeppelin DAO (renamed)")
	submit("dev-oz")
	tb.wantText("#flash", "DAO dev-oz changed")
	tb.wantText(`tr[data-dao="dev-oz"]`, "OpenZeppelin DAO (renamed)")
	tb.do("open the change form", chromedp.Click(chromedp.CSS(`tr[data-dao="dev-oz"] details.dao-edit summary`)), chromedp.WaitVisible(chromedp.ID("dao-form-dev-oz")))
	fill("dev-oz", "governor", noCode)
	submit("dev-oz")
	tb.do("the change form open again", chromedp.WaitVisible(chromedp.ID("governor-dev-oz-error")))
	refusedUnder("dev-oz", "governor", "no contract at "+noCode)
	if d, _ := daos.Catalog.DAO("dev-oz"); d.Governor != oz.Governor || d.Name != "OpenZeppelin DAO (renamed)" {
		t.Fatalf("a refused change changed the DAO: %+v", d)
	}

	// The file's DAO stays read-only behind the page too: a removal posted
	// for it is refused, and says where to change it.
	tb.do("post a removal of the file's DAO", chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.querySelector('tr[data-dao="dev-oz"] form[action$="/delete"]');
		f.action = "/admin/ui/daos/dev-bravo/delete";
		f.removeAttribute("data-confirm");
		f.submit();
	})()`))
	tb.waitLocation("/admin/ui/daos")
	tb.wantText("#flash", "defined in the configuration file")
	if got := rows(); !slices.Equal(got, []string{"dev-bravo", "dev-oz"}) {
		t.Fatalf("after refusing to remove the file's DAO: %v", got)
	}

	// Removed, once confirmed.
	tb.scripted()
	tb.do("answer the confirmation", chromedp.Evaluate[chromedp.Void](`window.confirm = (m) => { sessionStorage.setItem("asked", m); return true; }`))
	tb.do("remove", chromedp.Click(chromedp.CSS(`tr[data-dao="dev-oz"] form[action$="/delete"] button`)))
	tb.do("removed", chromedp.WaitNotPresent(chromedp.CSS(`tr[data-dao="dev-oz"]`)))
	tb.wantText("#flash", "DAO dev-oz removed")
	if asked := evaluate[[]string](tb, `[sessionStorage.getItem("asked") || ""]`); len(asked) != 1 || !strings.HasPrefix(asked[0], "Remove DAO dev-oz?") {
		t.Fatalf("no confirmation asked before the removal: %q", asked)
	}
	if _, ok := daos.Catalog.DAO("dev-oz"); ok {
		t.Fatal("the removed DAO is still in the catalog")
	}
	if got := rows(); !slices.Equal(got, []string{"dev-bravo"}) {
		t.Fatalf("after the removal: %v", got)
	}
}
