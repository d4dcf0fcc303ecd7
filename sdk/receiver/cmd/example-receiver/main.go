// Command example-receiver is a minimal govgate webhook receiver: it checks
// every delivery's signature with sdk/receiver and prints the notification.
//
// The secret returned at registration is read from the WEBHOOK_SECRET
// environment variable, never from a flag, so it stays out of the process
// list and shell history.
//
//	WEBHOOK_SECRET=whsec_... example-receiver -addr :8443 -cert cert.pem -key key.pem
//	WEBHOOK_SECRET=whsec_... example-receiver -addr :8080   # plain HTTP behind a TLS proxy
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/govgate/govgate/sdk/receiver"
)

func main() {
	addr := flag.String("addr", ":8080", "address to listen on")
	path := flag.String("path", "/", "path that receives deliveries")
	certFile := flag.String("cert", "", "TLS certificate (PEM); with -key, serve HTTPS")
	keyFile := flag.String("key", "", "TLS private key (PEM)")
	maxBody := flag.Int64("max-body", receiver.DefaultMaxBodyBytes, "largest accepted body in bytes")
	flag.Parse()

	if err := run(*addr, *path, *certFile, *keyFile, *maxBody); err != nil {
		log.Fatal(err)
	}
}

func run(addr, path, certFile, keyFile string, maxBody int64) error {
	secret := os.Getenv("WEBHOOK_SECRET")
	if secret == "" {
		return errors.New("WEBHOOK_SECRET is not set: use the secret returned when the webhook was registered")
	}
	if (certFile == "") != (keyFile == "") {
		return errors.New("-cert and -key go together")
	}

	// The contract asks receivers to answer quickly and work asynchronously:
	// the handler only queues a verified body, and printer does the work.
	queue := make(chan []byte, 256)
	go printer(queue)

	mux := http.NewServeMux()
	mux.Handle("POST "+path, receiver.Handler(secret, func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case queue <- body:
			w.WriteHeader(http.StatusOK)
		default:
			// A full queue asks the sender to retry later rather than lose it.
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}, receiver.WithMaxBodyBytes(maxBody)))

	srv := &http.Server{
		Addr:              addr,
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	if certFile != "" {
		log.Printf("listening on https://%s%s", addr, path)
		return srv.ListenAndServeTLS(certFile, keyFile)
	}
	log.Printf("listening on http://%s%s (plain HTTP: put TLS in front of it)", addr, path)
	return srv.ListenAndServe()
}

// printer prints each notification: its id, type and DAO when the body is a
// govgate notification, and the indented JSON either way.
func printer(queue <-chan []byte) {
	for body := range queue {
		var n struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			DAO  string `json:"dao"`
		}
		_ = json.Unmarshal(body, &n) // a transformed body may have other fields
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, body, "", "  "); err != nil {
			pretty.Reset()
			pretty.Write(body)
		}
		fmt.Printf("notification id=%q type=%q dao=%q\n%s\n", n.ID, n.Type, n.DAO, pretty.Bytes())
	}
}
