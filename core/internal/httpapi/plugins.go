package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/govgate/govgate/core"
)

// PluginAdmin is what the plugin routes of the admin API need.
type PluginAdmin interface {
	List(ctx context.Context) ([]core.PluginView, error)
	Upload(ctx context.Context, wasm []byte) (core.PluginView, error)
	SetEnabled(ctx context.Context, name string, enabled bool) (core.StoredPlugin, error)
	Delete(ctx context.Context, name string) error
	Chain(ctx context.Context, webhookID int64) ([]core.ChainEntry, error)
	SetChain(ctx context.Context, webhookID int64, entries []core.ChainEntry) error
	Try(ctx context.Context, entries []core.ChainEntry, n core.Notification) (core.TryResult, error)
}

// MaxPluginUpload is the largest module the admin API accepts.
const MaxPluginUpload = 32 << 20

// PluginRoutes returns the admin routes of plugins and chains, for
// AdminConfig.Routes.
func PluginRoutes(p PluginAdmin, webhookExists func(ctx context.Context, id int64) error, log *slog.Logger) func(g *gin.RouterGroup) {
	return func(g *gin.RouterGroup) {
		g.GET("/plugins", func(c *gin.Context) {
			items, err := p.List(c.Request.Context())
			if err != nil {
				writeError(c, log, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"items": items})
		})
		g.POST("/plugins", func(c *gin.Context) {
			mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
			if mt != "application/wasm" && mt != "application/octet-stream" {
				writeError(c, log, core.Errorf(core.ECodeUnsupportedMediaType, "Content-Type must be application/wasm (the raw module as the body)"))
				return
			}
			wasm, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxPluginUpload))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					writeError(c, log, core.Errorf(core.ECodeBodyTooLarge, "plugin is larger than %d bytes", MaxPluginUpload))
					return
				}
				writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "could not read the module"))
				return
			}
			v, err := p.Upload(c.Request.Context(), wasm)
			if err != nil {
				writeError(c, log, err)
				return
			}
			log.Info("plugin uploaded", "plugin", v.Name, "version", v.Version)
			c.JSON(http.StatusCreated, v)
		})
		g.DELETE("/plugins/:name", func(c *gin.Context) {
			if err := p.Delete(c.Request.Context(), c.Param("name")); err != nil {
				writeError(c, log, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"success": true})
		})
		for _, action := range []string{"enable", "disable"} {
			enabled := action == "enable"
			g.POST("/plugins/:name/"+action, func(c *gin.Context) {
				sp, err := p.SetEnabled(c.Request.Context(), c.Param("name"), enabled)
				if err != nil {
					writeError(c, log, err)
					return
				}
				c.JSON(http.StatusOK, sp)
			})
		}
		getChain := func(c *gin.Context, id int64) {
			entries, err := p.Chain(c.Request.Context(), id)
			if err != nil {
				writeError(c, log, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"items": entries})
		}
		putChain := func(c *gin.Context, id int64) {
			entries, err := readChain(c, "items")
			if err != nil {
				writeError(c, log, err)
				return
			}
			if err := p.SetChain(c.Request.Context(), id, entries); err != nil {
				writeError(c, log, err)
				return
			}
			c.JSON(http.StatusOK, gin.H{"items": entries})
		}
		g.GET("/chain", func(c *gin.Context) { getChain(c, core.GlobalChain) })
		g.PUT("/chain", func(c *gin.Context) { putChain(c, core.GlobalChain) })
		webhookID := func(c *gin.Context) (int64, bool) {
			id, err := idParam(c)
			if err == nil {
				err = webhookExists(c.Request.Context(), id)
			}
			if err != nil {
				writeError(c, log, err)
				return 0, false
			}
			return id, true
		}
		g.GET("/webhooks/:id/chain", func(c *gin.Context) {
			if id, ok := webhookID(c); ok {
				getChain(c, id)
			}
		})
		g.PUT("/webhooks/:id/chain", func(c *gin.Context) {
			if id, ok := webhookID(c); ok {
				putChain(c, id)
			}
		})
		g.POST("/plugins/try", func(c *gin.Context) {
			obj, err := readJSONObject(c, MaxNotificationBody)
			if err != nil {
				writeError(c, log, err)
				return
			}
			var entries []core.ChainEntry
			if raw, ok := obj["chain"]; ok && string(raw) != "null" {
				if err := json.Unmarshal(raw, &entries); err != nil {
					writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "chain must be an array of {plugin, config, failurePolicy}"))
					return
				}
				if entries == nil {
					entries = []core.ChainEntry{}
				}
			}
			raw, ok := obj["notification"]
			if !ok {
				writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "notification is required"))
				return
			}
			var n core.Notification
			if err := json.Unmarshal(raw, &n); err != nil || n.Type == "" {
				writeError(c, log, core.Errorf(core.ECodeInvalidRequest, "notification must be an object with at least type, dao and data"))
				return
			}
			if n.ID == "" {
				n.ID = "try"
			}
			if n.OccurredAt.IsZero() {
				n.OccurredAt = time.Now().UTC()
			}
			if len(n.Data) == 0 {
				n.Data = json.RawMessage("{}")
			}
			res, err := p.Try(c.Request.Context(), entries, n)
			if err != nil {
				writeError(c, log, err)
				return
			}
			c.JSON(http.StatusOK, res)
		})
	}
}

func readChain(c *gin.Context, field string) ([]core.ChainEntry, error) {
	obj, err := readJSONObject(c, MaxRequestBody)
	if err != nil {
		return nil, err
	}
	raw, ok := obj[field]
	if !ok {
		return nil, core.Errorf(core.ECodeInvalidRequest, "%s is required: an array of {plugin, config, failurePolicy}", field)
	}
	var entries []core.ChainEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, core.Errorf(core.ECodeInvalidRequest, "%s must be an array of {plugin, config, failurePolicy}", field)
	}
	if entries == nil {
		entries = []core.ChainEntry{}
	}
	return entries, nil
}
