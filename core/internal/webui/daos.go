package webui

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/govgate/govgate/core"
)

// The DAOs page lists the DAOs govgate follows and adds, changes and
// removes those the admin API manages; the configuration file's are shown,
// not editable. A refused form comes back filled in, the error under the
// field the admin API named.

// daoForm is one DAO form's values and errors, as typed.
type daoForm struct {
	Slug, Name, ChainID, Governor, Kind, StartBlock, Token, NotifyFrom string
	NotifyHistory                                                      bool
	// Editing is the slug of the DAO a change form is for ("": the add form).
	Editing string
	// Errors by field (slug, name, chainId, governor, kind, startBlock,
	// token, notifyFromBlock); Error is one that names no field.
	Errors map[string]string
	Error  string
}

type daosData struct {
	Items []daoRow
	Add   daoForm
	Kinds []string
	Note  string
}

type daoRow struct {
	core.DAO
	Form daoForm // the change form, filled with the DAO
	Open bool    // the change form is open (it was refused)
}

func formOf(d core.DAO) daoForm {
	f := daoForm{Slug: d.Slug, Name: d.Name, ChainID: strconv.FormatUint(d.ChainID, 10), Governor: d.Governor, Kind: string(d.Kind),
		StartBlock: strconv.FormatUint(d.StartBlock, 10), Token: d.Token, NotifyHistory: d.NotifyHistory, Editing: d.Slug}
	if d.NotifyFromBlock != nil {
		f.NotifyFrom = strconv.FormatUint(*d.NotifyFromBlock, 10)
	}
	return f
}

func (u *UI) daos(w http.ResponseWriter, r *http.Request, s *session) {
	u.renderDAOs(w, r, http.StatusOK, nil)
}

// renderDAOs renders the page; refused, when set, is a form to show
// again with its errors.
func (u *UI) renderDAOs(w http.ResponseWriter, r *http.Request, status int, refused *daoForm) {
	d := daosData{Kinds: core.GovernorKindNames(), Add: daoForm{Kind: string(core.KindOZGovernor)}}
	var list struct{ Items []core.DAO }
	if err := u.get(r.Context(), "/admin/api/daos", &list); err != nil {
		d.Note = userMessage(err, "The DAO list")
	}
	for _, dao := range list.Items {
		row := daoRow{DAO: dao, Form: formOf(dao)}
		if refused != nil && refused.Editing == dao.Slug {
			row.Form, row.Open = *refused, true
		}
		d.Items = append(d.Items, row)
	}
	if refused != nil && refused.Editing == "" {
		d.Add = *refused
	}
	u.render(w, r, status, "daos", page{Title: "DAOs", Nav: "daos", Data: d})
}

// saveDAO adds a DAO (POST /admin/ui/daos) or changes one (POST
// /admin/ui/daos/{slug}).
func (u *UI) saveDAO(w http.ResponseWriter, r *http.Request, s *session) {
	f := daoForm{
		Slug: strings.TrimSpace(r.PostFormValue("slug")), Name: strings.TrimSpace(r.PostFormValue("name")),
		ChainID: strings.TrimSpace(r.PostFormValue("chainId")), Governor: strings.TrimSpace(r.PostFormValue("governor")),
		Kind: r.PostFormValue("kind"), StartBlock: strings.TrimSpace(r.PostFormValue("startBlock")),
		Token: strings.TrimSpace(r.PostFormValue("token")), NotifyFrom: strings.TrimSpace(r.PostFormValue("notifyFromBlock")),
		NotifyHistory: r.PostFormValue("notifyHistory") != "", Editing: r.PathValue("slug"), Errors: map[string]string{},
	}
	if f.Editing != "" {
		f.Slug = f.Editing
	}
	in := map[string]any{"slug": f.Slug, "name": f.Name, "governor": f.Governor, "kind": f.Kind, "notifyHistory": f.NotifyHistory}
	if f.Token != "" {
		in["token"] = f.Token
	}
	for _, n := range []struct {
		field, value string
		optional     bool
	}{{"chainId", f.ChainID, false}, {"startBlock", f.StartBlock, true}, {"notifyFromBlock", f.NotifyFrom, true}} {
		if n.value == "" && n.optional {
			continue
		}
		v, err := strconv.ParseUint(n.value, 10, 64)
		if err != nil {
			f.Errors[n.field] = "Write a whole number."
			continue
		}
		in[n.field] = v
	}
	if len(f.Errors) > 0 {
		u.renderDAOs(w, r, http.StatusUnprocessableEntity, &f)
		return
	}
	method, path, verb := http.MethodPost, "/admin/api/daos", "added"
	if f.Editing != "" {
		method, path, verb = http.MethodPut, "/admin/api/daos/"+url.PathEscape(f.Editing), "changed"
	}
	var out core.DAO
	body, err := jsonBody(in)
	if err == nil {
		_, err = u.call(r.Context(), method, path, body, "application/json", &out)
	}
	if err != nil {
		if e, ok := err.(*apiError); ok && e.Status < 500 {
			msg := e.Message
			if e.Field != "" {
				msg = strings.TrimPrefix(msg, e.Field+": ")
				f.Errors[e.Field] = msg
			} else {
				f.Error = msg
			}
			u.renderDAOs(w, r, e.Status, &f)
			return
		}
		u.done(w, r, s, "/admin/ui/daos", err, "Saving the DAO", "")
		return
	}
	text := "DAO " + out.Slug + " " + verb + ". The indexer catches it up; its history is served, not pushed."
	if f.Editing != "" {
		text = "DAO " + out.Slug + " " + verb + "."
	}
	u.done(w, r, s, "/admin/ui/daos", nil, "", text)
}

func (u *UI) deleteDAO(w http.ResponseWriter, r *http.Request, s *session) {
	slug := r.PathValue("slug")
	_, err := u.call(r.Context(), http.MethodDelete, "/admin/api/daos/"+url.PathEscape(slug), nil, "", nil)
	u.done(w, r, s, "/admin/ui/daos", err, "Removing the DAO", "DAO "+slug+" removed: it is no longer indexed nor served.")
}

// jsonBody encodes v as a request body.
func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}
