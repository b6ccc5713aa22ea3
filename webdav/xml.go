package webdav

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// xmlName is a namespace-resolved XML name.
type xmlName struct{ Space, Local string }

// xmlNode is an element of a parsed request body: resolved name, attributes
// (namespace declarations removed), child elements and the mixed content in
// document order (string or *xmlNode).
type xmlNode struct {
	Name    xmlName
	Attrs   []xml.Attr
	Kids    []*xmlNode
	Content []any
	// Lang is the effective xml:lang.
	Lang string
}

const xmlNS = "http://www.w3.org/XML/1998/namespace"

var (
	errXMLTooLarge = errors.New("xml body too large")
	errXMLInvalid  = errors.New("malformed xml body")
)

// parseXML reads a whole XML document from r, refusing bodies over max
// bytes and nesting deeper than maxDepth. It resolves namespaces itself,
// so undeclared prefixes and empty prefixed declarations (xmlns:p="")
// are errors, as XML Namespaces 1.0 requires. A nil node with nil error
// means an empty body.
// maxXMLElements caps the elements of one request body (413 beyond).
const maxXMLElements = 20000

func parseXML(r io.Reader, max int64, maxDepth int) (*xmlNode, error) {
	lr := &countingLimitReader{r: r, n: max}
	d := xml.NewDecoder(lr)
	d.Strict = true
	p := &xmlParser{maxDepth: maxDepth}
	for {
		tok, err := d.RawToken()
		if lr.over {
			return nil, errXMLTooLarge
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errXMLInvalid
		}
		if err := p.token(tok); err != nil {
			return nil, err
		}
	}
	if len(p.stack) != 0 {
		return nil, errXMLInvalid
	}
	return p.root, nil
}

// xmlParser builds the tree of parseXML from raw tokens, resolving
// namespace prefixes itself (RawToken does not, and encoding/xml's own
// resolution accepts what RFC 4918 bodies must not carry).
type xmlParser struct {
	maxDepth int
	stack    []xmlFrame
	root     *xmlNode
	seen     bool
	elements int
}

type xmlFrame struct {
	node *xmlNode
	raw  xml.Name
	ns   map[string]string
}

func (p *xmlParser) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		return p.start(t)
	case xml.EndElement:
		if len(p.stack) == 0 || p.stack[len(p.stack)-1].raw != t.Name {
			return errXMLInvalid
		}
		p.stack = p.stack[:len(p.stack)-1]
	case xml.CharData:
		if len(p.stack) == 0 {
			if strings.TrimSpace(string(t)) != "" {
				return errXMLInvalid
			}
			return nil
		}
		top := p.stack[len(p.stack)-1].node
		top.Content = append(top.Content, string(t))
	case xml.ProcInst, xml.Comment:
	case xml.Directive:
		// DTDs are refused: no entity expansion games.
		return errXMLInvalid
	}
	return nil
}

func (p *xmlParser) lookup(prefix string) (string, bool) {
	if prefix == "xml" {
		return xmlNS, true
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		if v, ok := p.stack[i].ns[prefix]; ok {
			return v, true
		}
	}
	if prefix == "" {
		return "", true
	}
	return "", false
}

func (p *xmlParser) start(t xml.StartElement) error {
	if len(p.stack) == 0 && p.seen {
		return errXMLInvalid
	}
	p.seen = true
	// A body of empty elements holds far more nodes than bytes' worth of
	// memory; no WebDAV request needs this many.
	if p.elements++; p.elements > maxXMLElements {
		return errXMLTooLarge
	}
	if len(p.stack) >= p.maxDepth {
		return errXMLInvalid
	}
	ns, err := nsDecls(t.Attr)
	if err != nil {
		return err
	}
	n := &xmlNode{}
	if len(p.stack) > 0 {
		n.Lang = p.stack[len(p.stack)-1].node.Lang
	}
	p.stack = append(p.stack, xmlFrame{node: n, raw: t.Name, ns: ns})
	space, ok := p.lookup(t.Name.Space)
	if !ok {
		return errXMLInvalid
	}
	n.Name = xmlName{space, t.Name.Local}
	if err := p.attrs(n, t.Attr); err != nil {
		return err
	}
	if len(p.stack) > 1 {
		parent := p.stack[len(p.stack)-2].node
		parent.Kids = append(parent.Kids, n)
		parent.Content = append(parent.Content, n)
	} else {
		p.root = n
	}
	return nil
}

// nsDecls reads an element's namespace declarations (nil when none),
// refusing empty prefixed ones and rebinding xmlns or xml.
func nsDecls(attrs []xml.Attr) (map[string]string, error) {
	var ns map[string]string
	for _, a := range attrs {
		switch {
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			if ns == nil {
				ns = map[string]string{}
			}
			ns[""] = a.Value
		case a.Name.Space == "xmlns":
			if a.Value == "" || a.Name.Local == "xmlns" || (a.Name.Local == "xml" && a.Value != xmlNS) {
				return nil, errXMLInvalid
			}
			if ns == nil {
				ns = map[string]string{}
			}
			ns[a.Name.Local] = a.Value
		}
	}
	return ns, nil
}

// attrs resolves n's attributes other than namespace declarations and
// takes its xml:lang.
func (p *xmlParser) attrs(n *xmlNode, attrs []xml.Attr) error {
	for _, a := range attrs {
		if (a.Name.Space == "" && a.Name.Local == "xmlns") || a.Name.Space == "xmlns" {
			continue
		}
		as := ""
		if a.Name.Space != "" {
			var ok bool
			if as, ok = p.lookup(a.Name.Space); !ok {
				return errXMLInvalid
			}
		}
		if as == xmlNS && a.Name.Local == "lang" {
			n.Lang = a.Value
		}
		n.Attrs = append(n.Attrs, xml.Attr{Name: xml.Name{Space: as, Local: a.Name.Local}, Value: a.Value})
	}
	return nil
}

// text returns the character data directly inside n.
func (n *xmlNode) text() string {
	var b strings.Builder
	for _, c := range n.Content {
		if s, ok := c.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// inner serialises n's content as self-contained XML: every element
// declares its namespace when it differs from its parent's.
func (n *xmlNode) inner() string {
	var b strings.Builder
	writeContent(&b, n, "\x00")
	return b.String()
}

func writeContent(b *strings.Builder, n *xmlNode, parentSpace string) {
	for _, c := range n.Content {
		switch v := c.(type) {
		case string:
			escapeText(b, v)
		case *xmlNode:
			writeStart(b, v, parentSpace)
			writeContent(b, v, v.Name.Space)
			b.WriteString("</")
			b.WriteString(v.Name.Local)
			b.WriteString(">")
		}
	}
}

// writeStart writes n's start tag to b, unprefixed, with a default
// namespace declaration when its namespace differs from its parent's.
func writeStart(b *strings.Builder, n *xmlNode, parentSpace string) {
	b.WriteString("<")
	b.WriteString(n.Name.Local)
	if n.Name.Space != parentSpace {
		b.WriteString(` xmlns="`)
		escapeAttr(b, n.Name.Space)
		b.WriteString(`"`)
	}
	for i, a := range n.Attrs {
		b.WriteString(" ")
		if a.Name.Space == xmlNS {
			b.WriteString("xml:")
		} else if a.Name.Space != "" {
			p := "a" + itoa(i)
			b.WriteString("xmlns:" + p + `="`)
			escapeAttr(b, a.Name.Space)
			b.WriteString(`" ` + p + ":")
		}
		b.WriteString(a.Name.Local)
		b.WriteString(`="`)
		escapeAttr(b, a.Value)
		b.WriteString(`"`)
	}
	b.WriteString(">")
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

type countingLimitReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *countingLimitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// Probe one byte to tell "exactly max" from "more than max".
		var one [1]byte
		k, err := l.r.Read(one[:])
		if k > 0 {
			l.over = true
			return 0, errXMLTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

type stringWriter interface {
	WriteString(string) (int, error)
	WriteByte(byte) error
}

// escapeText writes s with XML text escaping.
func escapeText(b stringWriter, s string) { escape(b, s, textEscapes) }

// escapeAttr writes s escaped for a double-quoted attribute.
func escapeAttr(b stringWriter, s string) { escape(b, s, attrEscapes) }

// textEscapes and attrEscapes say what each byte is written as in text
// and in a double-quoted attribute ("": as itself). An attribute also
// escapes the quote, and the white space a parser would normalize.
var textEscapes, attrEscapes = xmlEscapes(false), xmlEscapes(true)

func xmlEscapes(attr bool) *[256]string {
	t := &[256]string{'<': "&lt;", '>': "&gt;", '&': "&amp;", '\r': "&#xD;"}
	if attr {
		t['"'], t['\n'], t['\t'] = "&quot;", "&#xA;", "&#x9;"
	}
	return t
}

// escape writes s with each byte that table escapes replaced.
func escape(b stringWriter, s string, table *[256]string) {
	last := 0
	for i := 0; i < len(s); i++ {
		esc := table[s[i]]
		if esc == "" {
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(esc)
		last = i + 1
	}
	b.WriteString(s[last:])
}

// child returns n's first child named {space}local.
func (n *xmlNode) child(space, local string) *xmlNode {
	for _, k := range n.Kids {
		if k.Name.Space == space && k.Name.Local == local {
			return k
		}
	}
	return nil
}
