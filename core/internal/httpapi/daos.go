package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// DAOAdmin changes the DAOs govgate follows, at run time: it checks a DAO
// against its chain (its governor holds code and answers as its kind, its
// voting token exists), stores it, and has the running indexers and every
// process pick it up. Errors about a field are a *core.Error wrapping a
// *core.FieldError.
type DAOAdmin interface {
	CreateDAO(ctx context.Context, d core.DAO) (core.DAO, error)
	UpdateDAO(ctx context.Context, d core.DAO) (core.DAO, error)
	DeleteDAO(ctx context.Context, slug string) error
}

// MaxDAOBody is the largest DAO definition the admin API reads.
const MaxDAOBody = 16 << 10

// jsonField names a core.DAO field as the admin API's JSON does; the
// configuration file's names are the FieldError's.
var jsonField = map[string]string{
	"chain_id": "chainId", "start_block": "startBlock", "notify_from_block": "notifyFromBlock", "notify_history": "notifyHistory",
}

// FieldErr returns a client error about one field of a DAO definition.
func FieldErr(fe *core.FieldError) error {
	field := fe.Field
	if j, ok := jsonField[field]; ok {
		field = j
	}
	out := &core.FieldError{Field: field, Message: fe.Message}
	return &core.Error{Code: core.ECodeInvalidRequest, Message: out.Error(), Err: out}
}

// daoRoutes serves GET/POST /admin/api/daos and GET/PUT/DELETE
// /admin/api/daos/{slug}.
func daoRoutes(api *gin.RouterGroup, daos core.DAOCatalog, admin DAOAdmin, log *slog.Logger) {
	api.GET("/daos", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"items": daos.DAOs()}) })
	api.GET("/daos/:slug", func(c *gin.Context) {
		d, ok := daos.DAO(c.Param("slug"))
		if !ok {
			writeError(c, log, core.Errorf(core.ECodeUnknownDAO, "unknown dao %q (GET /admin/api/daos lists them)", c.Param("slug")))
			return
		}
		c.JSON(http.StatusOK, d)
	})
	unavailable := func(c *gin.Context) bool {
		if admin == nil {
			writeError(c, log, core.Errorf(core.ECodeUnavailable, "DAOs cannot be changed by this process"))
			return true
		}
		return false
	}
	// changeable reads {slug}: a DAO this API added, so it may change it
	// (one from the configuration file would come back at the next
	// start), in a process that can change DAOs. The hints end the
	// errors' messages.
	changeable := func(c *gin.Context, unknownHint, configHint string) (string, bool) {
		if unavailable(c) {
			return "", false
		}
		slug := c.Param("slug")
		old, ok := daos.DAO(slug)
		if !ok {
			writeError(c, log, core.Errorf(core.ECodeUnknownDAO, "unknown dao %q%s", slug, unknownHint))
			return "", false
		}
		if old.Source == core.DAOSourceConfig {
			writeError(c, log, core.Errorf(core.ECodeConflict, "dao %q is defined in the configuration file: %s", slug, configHint))
			return "", false
		}
		return slug, true
	}
	api.POST("/daos", func(c *gin.Context) {
		if unavailable(c) {
			return
		}
		d, err := daoFromBody(c, "")
		if err != nil {
			writeError(c, log, err)
			return
		}
		if _, exists := daos.DAO(d.Slug); exists {
			writeError(c, log, FieldErr(&core.FieldError{Field: "slug", Message: "a dao with this slug exists: PUT /admin/api/daos/" + d.Slug + " changes it"}))
			return
		}
		out, err := admin.CreateDAO(c.Request.Context(), d)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.Header("Location", "/admin/api/daos/"+out.Slug)
		c.JSON(http.StatusCreated, out)
	})
	api.PUT("/daos/:slug", func(c *gin.Context) {
		slug, ok := changeable(c, " (POST /admin/api/daos adds one)", "change it there (a change here would be undone at the next start)")
		if !ok {
			return
		}
		d, err := daoFromBody(c, slug)
		if err != nil {
			writeError(c, log, err)
			return
		}
		out, err := admin.UpdateDAO(c.Request.Context(), d)
		if err != nil {
			writeError(c, log, err)
			return
		}
		c.JSON(http.StatusOK, out)
	})
	api.DELETE("/daos/:slug", func(c *gin.Context) {
		slug, ok := changeable(c, "", "remove it there")
		if !ok {
			return
		}
		if err := admin.DeleteDAO(c.Request.Context(), slug); err != nil {
			writeError(c, log, err)
			return
		}
		c.Status(http.StatusNoContent)
	})
}

// daoFromBody reads a DAO definition. With slug set (PUT), the body's slug
// may be left out but must match when given.
func daoFromBody(c *gin.Context, slug string) (core.DAO, error) {
	if err := requireJSON(c); err != nil {
		return core.DAO{}, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxDAOBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return core.DAO{}, core.Errorf(core.ECodeBodyTooLarge, "request body is larger than %d bytes", MaxDAOBody)
		}
		return core.DAO{}, core.Errorf(core.ECodeInvalidJSON, "could not read the request body")
	}
	d, err := ParseDAO(body)
	if err != nil {
		return core.DAO{}, err
	}
	if slug != "" {
		if d.Slug == "" {
			d.Slug = slug
		}
		if d.Slug != slug {
			return core.DAO{}, FieldErr(&core.FieldError{Field: "slug", Message: "the slug of a dao cannot change: DELETE it and POST a new one"})
		}
	}
	return d, nil
}

// ParseDAO decodes and checks a DAO definition in the admin API's JSON.
// Unknown fields are refused, so that a misspelt one is not silently lost.
func ParseDAO(body []byte) (core.DAO, error) {
	var in struct {
		Slug            string            `json:"slug"`
		Name            string            `json:"name"`
		ChainID         uint64            `json:"chainId"`
		Governor        string            `json:"governor"`
		Kind            core.GovernorKind `json:"kind"`
		StartBlock      uint64            `json:"startBlock"`
		Token           string            `json:"token"`
		NotifyFromBlock *uint64           `json:"notifyFromBlock"`
		NotifyHistory   bool              `json:"notifyHistory"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		if len(bytes.TrimSpace(body)) == 0 {
			return core.DAO{}, core.Errorf(core.ECodeInvalidJSON, "request body is empty; want a JSON object")
		}
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field != "" {
			return core.DAO{}, FieldErr(&core.FieldError{Field: typ.Field, Message: "want a " + typ.Type.String() + ", got " + typ.Value})
		}
		return core.DAO{}, core.Errorf(core.ECodeInvalidJSON, "request body is not a DAO definition: %s", daoJSONError(err))
	}
	if dec.More() {
		return core.DAO{}, core.Errorf(core.ECodeInvalidJSON, "request body has data after the JSON object")
	}
	d := core.DAO{Slug: in.Slug, Name: in.Name, ChainID: in.ChainID, Governor: in.Governor, Kind: in.Kind, StartBlock: in.StartBlock,
		Token: in.Token, NotifyFromBlock: in.NotifyFromBlock, NotifyHistory: in.NotifyHistory}
	if fe := d.Check(); fe != nil {
		return core.DAO{}, FieldErr(fe)
	}
	return d, nil
}

func daoJSONError(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}
