package senders_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/ontoflow/ontoflow/notifications/senders"
)

// mailServer is a real SMTP server (emersion/go-smtp) on 127.0.0.1 in the
// test process. Recipients named refused@ get 550, later@ get 451.
type mailServer struct {
	addr string
	port int
	mu   sync.Mutex
	got  []received
	auth []string // "user:pass" per successful AUTH
	// afterData, when set, runs after each message is received.
	afterData func()
}

type received struct {
	from string
	rcpt []string
	data []byte
	tls  bool
}

type mailSession struct {
	s   *mailServer
	c   *smtp.Conn
	cur received
}

func (m *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (m *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "mailer" || pass != "p@ss word" {
			return errors.New("bad credentials")
		}
		m.s.mu.Lock()
		m.s.auth = append(m.s.auth, user+":"+pass)
		m.s.mu.Unlock()
		return nil
	}), nil
}

func (m *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	m.cur = received{from: from}
	return nil
}

func (m *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch {
	case strings.HasPrefix(to, "refused@"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	case strings.HasPrefix(to, "later@"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 2, 0}, Message: "try again later"}
	}
	m.cur.rcpt = append(m.cur.rcpt, to)
	return nil
}

func (m *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.cur.data = b
	_, m.cur.tls = m.c.TLSConnectionState()
	m.s.mu.Lock()
	m.s.got = append(m.s.got, m.cur)
	after := m.s.afterData
	m.s.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

func (m *mailSession) Reset()        { m.cur = received{} }
func (m *mailSession) Logout() error { return nil }

func startMailServer(t *testing.T, tlsConfig *tls.Config) *mailServer {
	t.Helper()
	ms := &mailServer{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &mailSession{s: ms, c: c}, nil
	}))
	srv.Domain = "localhost"
	srv.TLSConfig = tlsConfig
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ms.addr = ln.Addr().String()
	ms.port = ln.Addr().(*net.TCPAddr).Port
	return ms
}

func (ms *mailServer) messages() []received {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]received(nil), ms.got...)
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ontoflow test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

func mailer(t *testing.T, url string, pool *x509.CertPool) *senders.Mailer {
	t.Helper()
	cfg, err := senders.ParseSMTPURL(url, "Ontoflow <ontoflow@ontoflow.test>")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 3 * time.Second
	if pool != nil {
		cfg.TLSConfig = &tls.Config{RootCAs: pool}
	}
	m, err := senders.NewMailer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parts reads a received message: its header and its text and HTML parts.
func parts(t *testing.T, data []byte) (mail.Header, string, string) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a message: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	var text, html string
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = p
		if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			r = quotedprintable.NewReader(p)
		}
		b, _ := io.ReadAll(r)
		ct, cp, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if cp["charset"] != "UTF-8" && cp["charset"] != "utf-8" {
			t.Errorf("part %s charset %q", ct, cp["charset"])
		}
		switch ct {
		case "text/plain":
			text = string(b)
		case "text/html":
			html = string(b)
		default:
			t.Errorf("unexpected part %s", ct)
		}
	}
	return msg.Header, text, html
}

func TestEmailStartTLSAndPerRecipient(t *testing.T) {
	serverTLS, pool := selfSigned(t)
	ms := startMailServer(t, serverTLS)
	m := mailer(t, "smtp://mailer:p%40ss%20word@127.0.0.1:"+strconv.Itoa(ms.port), pool)
	to := []string{"alice@ontoflow.test", "Bob Example <bob@ontoflow.test>", "refused@ontoflow.test", "later@ontoflow.test", "not an address"}
	msg := senders.Message{Title: "Ticket <42> closed\r\nBcc: mallory@ontoflow.test", Body: "Closed by alice & bob.\nSee you.\n\nSecond paragraph <b>not bold</b>. Grüße"}
	res, err := m.Send(context.Background(), to, msg)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	want := []struct {
		status    string
		retryable bool
		errPart   string
	}{{"sent", false, ""}, {"sent", false, ""}, {"failed", false, "550"}, {"failed", true, "451"}, {"failed", false, "not an e-mail address"}}
	for i, w := range want {
		r := res[i]
		if r.Address != to[i] || r.Status != w.status || r.Retryable != w.retryable || !strings.Contains(r.Error, w.errPart) {
			t.Errorf("recipient %d: %+v, want %+v", i, r, w)
		}
	}
	got := ms.messages()
	if len(got) != 2 {
		t.Fatalf("the server received %d messages, want 2", len(got))
	}
	if len(ms.auth) != 1 || ms.auth[0] != "mailer:p@ss word" {
		t.Errorf("AUTH seen by the server: %v", ms.auth)
	}
	for i, g := range got {
		rcpt := []string{"alice@ontoflow.test", "bob@ontoflow.test"}[i]
		if !g.tls {
			t.Errorf("message %d went without TLS", i)
		}
		if g.from != "ontoflow@ontoflow.test" || len(g.rcpt) != 1 || g.rcpt[0] != rcpt {
			t.Errorf("envelope %d: from %q to %v", i, g.from, g.rcpt)
		}
		h, text, html := parts(t, g.data)
		from, _ := mail.ParseAddress(h.Get("From"))
		toAddr, _ := mail.ParseAddress(h.Get("To"))
		subject, _ := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
		if from == nil || from.Address != "ontoflow@ontoflow.test" || from.Name != "Ontoflow" {
			t.Errorf("From %q", h.Get("From"))
		}
		if toAddr == nil || toAddr.Address != rcpt || h.Get("Cc") != "" || h.Get("Bcc") != "" {
			t.Errorf("To %q Cc %q Bcc %q", h.Get("To"), h.Get("Cc"), h.Get("Bcc"))
		}
		if subject != "Ticket <42> closed Bcc: mallory@ontoflow.test" {
			t.Errorf("Subject %q", subject)
		}
		if _, err := h.Date(); err != nil || h.Get("Message-ID") == "" || h.Get("MIME-Version") != "1.0" {
			t.Errorf("Date %q Message-ID %q MIME-Version %q", h.Get("Date"), h.Get("Message-ID"), h.Get("MIME-Version"))
		}
		if strings.ReplaceAll(text, "\r\n", "\n") != "Closed by alice & bob.\nSee you.\n\nSecond paragraph <b>not bold</b>. Grüße\n" {
			t.Errorf("text part %q", text)
		}
		for _, want := range []string{"<h2>Ticket &lt;42&gt; closed Bcc: mallory@ontoflow.test</h2>", "<p>Closed by alice &amp; bob.<br>See you.</p>", "<p>Second paragraph &lt;b&gt;not bold&lt;/b&gt;. Grüße</p>"} {
			if !strings.Contains(html, want) {
				t.Errorf("HTML part lacks %q:\n%s", want, html)
			}
		}
	}
}

func TestEmailTLSRequired(t *testing.T) {
	ms := startMailServer(t, nil) // offers no STARTTLS
	m := mailer(t, "smtp://127.0.0.1:"+strconv.Itoa(ms.port), nil)
	res, err := m.Send(context.Background(), []string{"alice@ontoflow.test"}, senders.Message{Title: "t", Body: "b"})
	e, ok := senders.AsError(err)
	if !ok || e.Retryable || e.Channel != "email" || res[0].Status != "failed" || res[0].Error == "" {
		t.Fatalf("STARTTLS required, server without it: %v %+v", err, res)
	}
	if n := len(ms.messages()); n != 0 {
		t.Fatalf("%d messages went in clear", n)
	}
	// Said plainly in the URL, plain text is allowed (a local relay).
	m = mailer(t, "smtp://127.0.0.1:"+strconv.Itoa(ms.port)+"?tls=none", nil)
	if res, err := m.Send(context.Background(), []string{"alice@ontoflow.test"}, senders.Message{Title: "t", Body: "b"}); err != nil || res[0].Status != "sent" {
		t.Fatalf("tls=none: %v %+v", err, res)
	}
	if got := ms.messages(); len(got) != 1 || got[0].tls {
		t.Fatalf("tls=none delivered %d", len(got))
	}
}

func TestEmailUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	m := mailer(t, "smtp://127.0.0.1:"+strconv.Itoa(port), nil)
	start := time.Now()
	res, err := m.Send(context.Background(), []string{"a@ontoflow.test", "b@ontoflow.test"}, senders.Message{Title: "t", Body: "b"})
	e, ok := senders.AsError(err)
	if !ok || !e.Retryable || len(res) != 2 || res[0].Status != "failed" || !res[1].Retryable || time.Since(start) > 3*time.Second {
		t.Fatalf("unreachable: %v %+v after %v", err, res, time.Since(start))
	}

	// A server that accepts and never greets: the timeout ends it.
	ln, _ = net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	cfg, _ := senders.ParseSMTPURL("smtp://"+ln.Addr().String(), "a@ontoflow.test")
	cfg.Timeout = 500 * time.Millisecond
	m, _ = senders.NewMailer(cfg)
	start = time.Now()
	_, err = m.Send(context.Background(), []string{"a@ontoflow.test"}, senders.Message{Title: "t", Body: "b"})
	if e, ok := senders.AsError(err); !ok || !e.Retryable || time.Since(start) > 3*time.Second {
		t.Fatalf("silent server: %v after %v", err, time.Since(start))
	}
}

func TestParseSMTPURL(t *testing.T) {
	c, err := senders.ParseSMTPURL("smtp://u%40x:p%3Aw@mail.ontoflow.test", "a@ontoflow.test")
	if err != nil || c.Host != "mail.ontoflow.test" || c.Port != 587 || c.TLS != senders.TLSStartTLS || c.Username != "u@x" || c.Password != "p:w" {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = senders.ParseSMTPURL("smtps://mail.ontoflow.test", "")
	if err != nil || c.Port != 465 || c.TLS != senders.TLSImplicit {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = senders.ParseSMTPURL("smtp://mail.ontoflow.test:25?tls=opportunistic", "")
	if err != nil || c.Port != 25 || c.TLS != senders.TLSOpportunistic {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"http://mail.ontoflow.test", "smtp://", "smtp://h:0", "smtp://h:99999", "smtp://h?tls=maybe", "smtps://h?tls=none", "smtp://h?x=1", "::"} {
		if _, err := senders.ParseSMTPURL(bad, ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := senders.ParseSMTPURL("smtp://h", "not an address"); err == nil {
		t.Error("bad sender accepted")
	}
}

// When the caller's time runs out mid-session, Send stops: what it sent
// is reported sent, the rest failed and retryable (for the step's next
// attempt), nothing after the deadline goes out.
func TestEmailStopsWhenTheCallersTimeRunsOut(t *testing.T) {
	serverTLS, pool := selfSigned(t)
	ms := startMailServer(t, serverTLS)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms.mu.Lock()
	ms.afterData = cancel // the first message received ends the caller's time
	ms.mu.Unlock()
	m := mailer(t, "smtp://mailer:p%40ss%20word@127.0.0.1:"+strconv.Itoa(ms.port), pool)
	to := []string{"a@ontoflow.test", "b@ontoflow.test", "c@ontoflow.test"}
	res, err := m.Send(ctx, to, senders.Message{Title: "t", Body: "b"})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if res[0].Status != "sent" || res[1].Status != "failed" || !res[1].Retryable || res[2].Status != "failed" || !res[2].Retryable {
		t.Errorf("results %+v: the first sent, the others left for a retry", res)
	}
	if got := ms.messages(); len(got) != 1 {
		t.Errorf("the server received %d messages, want 1", len(got))
	}
}
