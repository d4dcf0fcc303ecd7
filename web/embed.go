// Package web is govgate's admin page as files: the HTML templates and the
// static assets (CSS, JavaScript, logo), embedded so that the binary carries
// them. The server that renders them is core/internal/webui; this package
// holds no code, so a designer can change the page without reading Go.
package web

import "embed"

// Templates holds templates/*.html, parsed by the admin page's server.
//
//go:embed templates/*.html
var Templates embed.FS

// Static holds static/, served under /admin/static/.
//
//go:embed static
var Static embed.FS
