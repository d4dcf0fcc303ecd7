// Package plugindelivery adapts the plugin manager to the dispatcher, for
// the commands that wire the two (govgate serve and govgate-bench): the
// adapters themselves do not import each other.
package plugindelivery

import (
	"context"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/delivery"
	"github.com/govgate/govgate/core/internal/pluginmgr"
)

// Transformer runs m's chains on each delivery (delivery.Transformer) and
// starts a notification's global chain as its deliveries reach the
// dispatcher (delivery.Preparer).
func Transformer(m *pluginmgr.Manager) delivery.Transformer { return transformer{m} }

type transformer struct{ mgr *pluginmgr.Manager }

// The dispatcher finds Prepare through this interface.
var _ delivery.Preparer = transformer{}

func (t transformer) Prepare(j core.Job) { t.mgr.Prepare(j.Notification, j.Body) }

func (t transformer) Transform(ctx context.Context, j core.Job) (delivery.TransformResult, error) {
	out, err := t.mgr.Apply(ctx, j.Notification, j.Body, j.WebhookID)
	if err != nil {
		return delivery.TransformResult{}, err
	}
	return delivery.TransformResult{Keep: out.Keep, Body: out.Body, ContentType: out.ContentType, Trace: out.Trace, DropReason: out.DropReason}, nil
}
