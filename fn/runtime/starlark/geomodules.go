package starlark

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// geo.star, the geometry module of kpt's starlark function (qri-io/starlib's geo, on paulmach/orb
// v0.1.5): points, lines, polygons and multi-polygons in the plane, planar and geodesic distances
// and lengths, point-in-polygon, and GeoJSON feature collections. It is written here with the
// formulas that function computes with (orb's), so a script gets the same numbers; it reads
// nothing but its arguments. Where that function crashes (a polygon of no ring, a feature without
// a geometry, a GeometryCollection) this one returns an error, and `within` of a line checks every
// point of the line, as the module documents, where that function looks at the first one only.
func geoModules() map[string]starlark.StringDict {
	return map[string]starlark.StringDict{
		"geo.star": {"geo": &starlarkstruct.Module{Name: "geo", Members: starlark.StringDict{
			"Point":        starlark.NewBuiltin("Point", geoNewPoint),
			"Line":         starlark.NewBuiltin("Line", geoNewLine),
			"Polygon":      starlark.NewBuiltin("Polygon", geoNewPolygon),
			"MultiPolygon": starlark.NewBuiltin("MultiPolygon", geoNewMultiPolygon),
			"within":       starlark.NewBuiltin("within", geoWithin),
			"intersects":   starlark.NewBuiltin("intersects", geoIntersects),
			"parseGeoJSON": starlark.NewBuiltin("parseGeoJSON", geoParseGeoJSON),
		}}},
	}
}

// earthRadius is orb's, in metres.
const earthRadius = 6378137.0

// geoPoint is geo's Point: x (longitude) and y (latitude).
type geoPoint [2]float64

var (
	_ starlark.HasAttrs   = geoPoint{}
	_ starlark.Comparable = geoPoint{}
)

func (p geoPoint) String() string       { return fmt.Sprintf("(%f,%f)", p[0], p[1]) }
func (p geoPoint) Type() string         { return "Point" }
func (p geoPoint) Freeze()              {}
func (p geoPoint) Truth() starlark.Bool { return p[0] != 0 && p[1] != 0 }
func (p geoPoint) AttrNames() []string {
	return []string{"KNN", "buffer", "distance", "distanceGeodesic", "lat", "lng", "x", "y"}
}
func (p geoPoint) Hash() (uint32, error) { return floatHash(p[0]) - floatHash(p[1]), nil }

func (p geoPoint) CompareSameType(op syntax.Token, y starlark.Value, _ int) (bool, error) {
	return compareEqual(op, p == y.(geoPoint), "Point")
}

func (p geoPoint) Attr(name string) (starlark.Value, error) {
	switch name {
	case "x", "lat":
		return starlark.Float(p[0]), nil
	case "y", "lng":
		return starlark.Float(p[1]), nil
	case "distance":
		return p.method(name, func(q geoPoint) float64 { return planarDistance(p, q) }), nil
	case "distanceGeodesic":
		return p.method(name, func(q geoPoint) float64 { return geodesicDistance(p, q) }), nil
	case "buffer", "KNN":
		return notImplemented(name, strings.ToLower(name)), nil
	}
	return nil, nil
}

// method is a Point method of one Point argument, p2, giving a distance.
func (p geoPoint) method(name string, f func(geoPoint) float64) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var q geoPoint
		if err := starlark.UnpackArgs(name, args, kwargs, "p2", &q); err != nil {
			return nil, err
		}
		return starlark.Float(f(q)), nil
	}).BindReceiver(p)
}

func notImplemented(name, what string) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
		return starlark.None, fmt.Errorf("not yet implemented: %s", what)
	})
}

func compareEqual(op syntax.Token, equal bool, typ string) (bool, error) {
	switch op {
	case syntax.EQL:
		return equal, nil
	case syntax.NEQ:
		return !equal, nil
	}
	return false, fmt.Errorf("%s %s %s not implemented", typ, op, typ)
}

// geoLine is geo's Line: points in order.
type geoLine []geoPoint

var (
	_ starlark.Indexable  = geoLine(nil)
	_ starlark.Iterable   = geoLine(nil)
	_ starlark.HasAttrs   = geoLine(nil)
	_ starlark.Comparable = geoLine(nil)
)

func (l geoLine) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for _, p := range l {
		b.WriteString(p.String() + " ")
	}
	b.WriteByte(']')
	return b.String()
}
func (l geoLine) Type() string               { return "Line" }
func (l geoLine) Freeze()                    {}
func (l geoLine) Truth() starlark.Bool       { return len(l) > 0 }
func (l geoLine) Len() int                   { return len(l) }
func (l geoLine) Index(i int) starlark.Value { return l[i] }
func (l geoLine) Iterate() starlark.Iterator { return &sliceIterator{n: len(l), at: l.Index} }
func (l geoLine) AttrNames() []string        { return []string{"buffer", "length", "lengthGeodesic"} }

func (l geoLine) Hash() (uint32, error) {
	var h uint32
	for _, p := range l {
		ph, _ := p.Hash()
		h += ph
	}
	return h, nil
}

func (l geoLine) CompareSameType(op syntax.Token, y starlark.Value, _ int) (bool, error) {
	m := y.(geoLine)
	equal := len(l) == len(m)
	for i := 0; equal && i < len(l); i++ {
		equal = l[i] == m[i]
	}
	return compareEqual(op, equal, "Line")
}

func (l geoLine) Attr(name string) (starlark.Value, error) {
	switch name {
	case "length":
		return l.length(name, planarDistance), nil
	case "lengthGeodesic":
		return l.length(name, geodesicDistance), nil
	case "buffer":
		return notImplemented(name, name), nil
	}
	return nil, nil
}

func (l geoLine) length(name string, distance func(a, b geoPoint) float64) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
			return nil, err
		}
		// orb's lineStringLength: each segment from the later point to the earlier
		sum := 0.0
		for i := 1; i < len(l); i++ {
			sum += distance(l[i], l[i-1])
		}
		return starlark.Float(sum), nil
	}).BindReceiver(l)
}

func (l geoLine) closed() bool { return len(l) > 0 && l[0] == l[len(l)-1] }

// geoPolygon is geo's Polygon: closed lines, the outer boundary first, then the holes.
type geoPolygon []geoLine

var (
	_ starlark.Indexable  = geoPolygon(nil)
	_ starlark.HasAttrs   = geoPolygon(nil)
	_ starlark.Comparable = geoPolygon(nil)
)

func (p geoPolygon) String() string                      { return fmt.Sprintf("polygon %d rings", len(p)) }
func (p geoPolygon) Type() string                        { return "Polygon" }
func (p geoPolygon) Freeze()                             {}
func (p geoPolygon) Truth() starlark.Bool                { return len(p) > 0 }
func (p geoPolygon) Len() int                            { return len(p) }
func (p geoPolygon) Index(i int) starlark.Value          { return p[i] }
func (p geoPolygon) Iterate() starlark.Iterator          { return &sliceIterator{n: len(p), at: p.Index} }
func (p geoPolygon) Attr(string) (starlark.Value, error) { return nil, nil }
func (p geoPolygon) AttrNames() []string                 { return nil }

func (p geoPolygon) Hash() (uint32, error) {
	var h uint32
	for _, l := range p {
		lh, _ := l.Hash()
		h += lh
	}
	return h, nil
}

func (p geoPolygon) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	q := y.(geoPolygon)
	equal := len(p) == len(q)
	for i := 0; equal && i < len(p); i++ {
		equal, _ = p[i].CompareSameType(syntax.EQL, q[i], depth)
	}
	return compareEqual(op, equal, "Polygon")
}

// contains is orb's planar.PolygonContains: in the outer ring and in no hole (the boundary is in).
func (p geoPolygon) contains(pt geoPoint) bool {
	if len(p) == 0 || !ringContains(p[0], pt) {
		return false
	}
	for _, hole := range p[1:] {
		if ringContains(hole, pt) {
			return false
		}
	}
	return true
}

// geoMultiPolygon is geo's MultiPolygon: polygons that behave as one.
type geoMultiPolygon []geoPolygon

var (
	_ starlark.Indexable  = geoMultiPolygon(nil)
	_ starlark.HasAttrs   = geoMultiPolygon(nil)
	_ starlark.Comparable = geoMultiPolygon(nil)
)

func (m geoMultiPolygon) String() string                      { return fmt.Sprintf("multi polygon %d polygons", len(m)) }
func (m geoMultiPolygon) Type() string                        { return "MultiPolygon" }
func (m geoMultiPolygon) Freeze()                             {}
func (m geoMultiPolygon) Truth() starlark.Bool                { return len(m) > 0 }
func (m geoMultiPolygon) Len() int                            { return len(m) }
func (m geoMultiPolygon) Index(i int) starlark.Value          { return m[i] }
func (m geoMultiPolygon) Iterate() starlark.Iterator          { return &sliceIterator{n: len(m), at: m.Index} }
func (m geoMultiPolygon) Attr(string) (starlark.Value, error) { return nil, nil }
func (m geoMultiPolygon) AttrNames() []string                 { return nil }

func (m geoMultiPolygon) Hash() (uint32, error) {
	var h uint32
	for _, p := range m {
		ph, _ := p.Hash()
		h += ph
	}
	return h, nil
}

func (m geoMultiPolygon) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	n := y.(geoMultiPolygon)
	equal := len(m) == len(n)
	for i := 0; equal && i < len(m); i++ {
		equal, _ = m[i].CompareSameType(syntax.EQL, n[i], depth)
	}
	return compareEqual(op, equal, "MultiPolygon")
}

type sliceIterator struct {
	i, n int
	at   func(int) starlark.Value
}

func (it *sliceIterator) Next(p *starlark.Value) bool {
	if it.i >= it.n {
		return false
	}
	*p = it.at(it.i)
	it.i++
	return true
}

func (it *sliceIterator) Done() {}

// floatHash is starlark's hash of a float (that of the int it truncates to), as starlib hashes a
// point's coordinates.
func floatHash(f float64) uint32 {
	if math.Abs(f) > math.MaxFloat64 || f != f {
		return 1618033 // NaN and the infinities, as starlib
	}
	var i big.Int
	if math.MinInt64 <= f && f <= math.MaxInt64 {
		i.SetInt64(int64(f))
	} else {
		r := new(big.Rat).SetFloat64(f)
		i.Div(r.Num(), r.Denom())
	}
	h, _ := starlark.MakeInt(int(i.Int64())).Hash()
	return h
}

// planarDistance is orb's planar.Distance: Euclidean.
func planarDistance(a, b geoPoint) float64 {
	d0, d1 := a[0]-b[0], a[1]-b[1]
	return math.Sqrt(d0*d0 + d1*d1)
}

// geodesicDistance is orb's geo.Distance: Pythagoras on an equirectangular projection of a sphere
// of the Earth's radius, in metres.
func geodesicDistance(a, b geoPoint) float64 {
	dLat := deg2rad(a[1] - b[1])
	dLon := math.Abs(deg2rad(a[0] - b[0]))
	if dLon > math.Pi {
		dLon = 2*math.Pi - dLon
	}
	x := dLon * math.Cos(deg2rad((a[1]+b[1])/2.0))
	return math.Sqrt(dLat*dLat+x*x) * earthRadius
}

func deg2rad(d float64) float64 { return d * math.Pi / 180.0 }

// ringContains is orb's planar.RingContains: a ray cast, the boundary counted in.
func ringContains(r geoLine, pt geoPoint) bool {
	if len(r) == 0 {
		return false
	}
	lo, hi := r[0], r[0]
	for _, p := range r {
		lo = geoPoint{math.Min(lo[0], p[0]), math.Min(lo[1], p[1])}
		hi = geoPoint{math.Max(hi[0], p[0]), math.Max(hi[1], p[1])}
	}
	if pt[1] < lo[1] || hi[1] < pt[1] || pt[0] < lo[0] || hi[0] < pt[0] {
		return false
	}
	c, on := rayIntersect(pt, r[0], r[len(r)-1])
	if on {
		return true
	}
	for i := 0; i < len(r)-1; i++ {
		inter, on := rayIntersect(pt, r[i], r[i+1])
		if on {
			return true
		}
		if inter {
			c = !c
		}
	}
	return c
}

// rayIntersect is orb's (from Rosetta Code's ray casting): whether a ray from p crosses the segment
// s-e, and whether p is on it.
func rayIntersect(p, s, e geoPoint) (intersects, on bool) {
	if s[0] > e[0] {
		s, e = e, s
	}
	if p[0] == s[0] {
		if p[1] == s[1] {
			return false, true
		} else if s[0] == e[0] {
			if s[1] > e[1] && s[1] >= p[1] && p[1] >= e[1] {
				return false, true
			}
			if e[1] > s[1] && e[1] >= p[1] && p[1] >= s[1] {
				return false, true
			}
		}
		p[0] = math.Nextafter(p[0], math.Inf(1))
	} else if p[0] == e[0] {
		if p[1] == e[1] {
			return false, true
		}
		p[0] = math.Nextafter(p[0], math.Inf(1))
	}
	if p[0] < s[0] || p[0] > e[0] {
		return false, false
	}
	if s[1] > e[1] {
		if p[1] > s[1] {
			return false, false
		} else if p[1] < e[1] {
			return true, false
		}
	} else {
		if p[1] > e[1] {
			return false, false
		} else if p[1] < s[1] {
			return true, false
		}
	}
	rs := (p[1] - s[1]) / (p[0] - s[0])
	ds := (e[1] - s[1]) / (e[0] - s[0])
	if rs == ds {
		return false, true
	}
	return rs <= ds, false
}

// number is an int or float argument as a float64, as starlib reads one.
func number(v starlark.Value) (float64, error) {
	switch n := v.(type) {
	case starlark.Int:
		i, ok := n.Int64()
		if !ok {
			return 0, errors.New("invalid int")
		}
		return float64(i), nil
	case starlark.Float:
		return float64(n), nil
	}
	return 0, fmt.Errorf("invalid type '%s' expected int or float", v.Type())
}

func geoNewPoint(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, y starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "x", &x, "y", &y); err != nil {
		return nil, err
	}
	fx, err := number(x)
	if err != nil {
		return nil, err
	}
	fy, err := number(y)
	if err != nil {
		return nil, err
	}
	return geoPoint{fx, fy}, nil
}

func geoNewLine(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var points *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "points", &points); err != nil {
		return nil, err
	}
	return lineFromList(points)
}

// lineFromList reads a line from points and [x, y] pairs (starlib reads the first two numbers of
// a longer list).
func lineFromList(points *starlark.List) (geoLine, error) {
	line := make(geoLine, 0, points.Len())
	for i := 0; i < points.Len(); i++ {
		switch pt := points.Index(i).(type) {
		case geoPoint:
			line = append(line, pt)
		case *starlark.List:
			if pt.Len() < 2 {
				return nil, fmt.Errorf("wrong number elements for point. expected 2, got: %d", pt.Len())
			}
			x, err := number(pt.Index(0))
			if err != nil {
				return nil, err
			}
			y, err := number(pt.Index(1))
			if err != nil {
				return nil, err
			}
			line = append(line, geoPoint{x, y})
		default:
			return nil, fmt.Errorf("invalid type '%s' to create line", pt.Type())
		}
	}
	return line, nil
}

func geoNewPolygon(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var rings *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "rings", &rings); err != nil {
		return nil, err
	}
	p := make(geoPolygon, 0, rings.Len())
	for i := 0; i < rings.Len(); i++ {
		var line geoLine
		switch l := rings.Index(i).(type) {
		case geoLine:
			line = l
		case *starlark.List:
			var err error
			if line, err = lineFromList(l); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("invalid type for creating polygon: %s", l.Type())
		}
		if !line.closed() {
			return nil, fmt.Errorf("line %d is not closed", i)
		}
		p = append(p, line)
	}
	return p, nil
}

func geoNewMultiPolygon(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var polygons *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "polygons", &polygons); err != nil {
		return nil, err
	}
	m := make(geoMultiPolygon, 0, polygons.Len())
	for i := 0; i < polygons.Len(); i++ {
		p, ok := polygons.Index(i).(geoPolygon)
		if !ok {
			return nil, fmt.Errorf("invalid type for creating MultiPolygon: %s", polygons.Index(i).Type())
		}
		m = append(m, p)
	}
	return m, nil
}

func geoWithin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var a, outer starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "a", &a, "b", &outer); err != nil {
		return nil, err
	}
	var contains func(geoPoint) bool
	switch g := outer.(type) {
	case geoPolygon:
		contains = g.contains
	case geoMultiPolygon:
		// orb's planar.MultiPolygonContains: in any of them
		contains = func(pt geoPoint) bool {
			for _, p := range g {
				if p.contains(pt) {
					return true
				}
			}
			return false
		}
	default:
		return nil, fmt.Errorf("within b value must be either a Polygon or Multipolygon. got: %s", outer.Type())
	}
	switch g := a.(type) {
	case geoPoint:
		return starlark.Bool(contains(g)), nil
	case geoLine:
		for _, pt := range g {
			if !contains(pt) {
				return starlark.False, nil
			}
		}
		return starlark.True, nil
	case geoPolygon:
		return nil, errors.New("checking polygons-within-polygons is not yet supported")
	}
	return nil, fmt.Errorf("unrecognized type: %s", a.Type())
}

func geoIntersects(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return starlark.None, errors.New("not finished: intersects")
}

// parseGeoJSON reads an IETF RFC 7946 FeatureCollection into a list of geometries (Points, Lines
// and Polygons) and the list of their properties, as starlib reads it through orb's geojson.
func geoParseGeoJSON(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var data starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "data", &data); err != nil {
		return nil, err
	}
	s, ok := data.(starlark.String)
	if !ok {
		return nil, errors.New("parseGeoJSON: invalid argument type, expected string")
	}
	var fc struct {
		Type     string `json:"type"`
		Features []struct {
			Type     string `json:"type"`
			Geometry *struct {
				Type        string          `json:"type"`
				Coordinates json.RawMessage `json:"coordinates"`
			} `json:"geometry"`
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(s), &fc); err != nil {
		return nil, err
	}
	if fc.Type != "FeatureCollection" {
		return nil, fmt.Errorf("geojson: not a feature collection: type=%s", fc.Type)
	}
	geoms := make([]starlark.Value, 0, len(fc.Features))
	props := make([]starlark.Value, 0, len(fc.Features))
	for _, f := range fc.Features {
		if f.Type != "Feature" {
			return nil, fmt.Errorf("geojson: not a feature: type=%s", f.Type)
		}
		if f.Geometry == nil {
			return nil, errors.New("geojson: a feature without a geometry")
		}
		var g starlark.Value
		switch f.Geometry.Type {
		case "Point":
			var p geoPoint
			if err := unmarshalCoordinates(f.Geometry.Coordinates, &p); err != nil {
				return nil, err
			}
			g = p
		case "LineString":
			var l geoLine
			if err := unmarshalCoordinates(f.Geometry.Coordinates, &l); err != nil {
				return nil, err
			}
			if l == nil {
				l = geoLine{}
			}
			g = l
		case "Polygon":
			var p geoPolygon
			if err := unmarshalCoordinates(f.Geometry.Coordinates, &p); err != nil {
				return nil, err
			}
			if p == nil {
				p = geoPolygon{}
			}
			g = p
		case "MultiPoint", "MultiLineString", "MultiPolygon", "GeometryCollection":
			return nil, fmt.Errorf("unrecognized geoJSON type: %s", f.Geometry.Type)
		default:
			return nil, errors.New("geojson: invalid geometry")
		}
		p, err := jsonToStarlark(map[string]any(f.Properties), 0)
		if err != nil {
			return nil, err
		}
		geoms = append(geoms, g)
		props = append(props, p)
	}
	return starlark.Tuple{starlark.NewList(geoms), starlark.NewList(props)}, nil
}

// unmarshalCoordinates reads GeoJSON coordinates as orb reads them into its arrays of two floats: a
// longer position keeps its first two numbers, a shorter one is padded with zeros.
func unmarshalCoordinates(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// jsonToStarlark turns decoded JSON into starlark values as starlib's util.Marshal does: numbers
// are floats. An object's keys are sorted (starlib takes Go's map order, which varies from run to
// run).
func jsonToStarlark(v any, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deeply")
	}
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case string:
		return starlark.String(x), nil
	case float64:
		return starlark.Float(x), nil
	case []any:
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			ev, err := jsonToStarlark(e, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = ev
		}
		return starlark.NewList(elems), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := starlark.NewDict(len(keys))
		for _, k := range keys {
			ev, err := jsonToStarlark(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), ev); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}
