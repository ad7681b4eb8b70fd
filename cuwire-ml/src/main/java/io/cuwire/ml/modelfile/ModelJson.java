package io.cuwire.ml.modelfile;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON of a model file's header: {@link #parse} into maps, lists, strings, {@code Long}s (integers), {@code
 * Double}s, booleans and {@code null}; {@link #write} the same back. Strict (no NaN, no duplicate keys, nothing after
 * the value) and bounded: nesting deeper than {@value #MAX_DEPTH} is refused, so hostile text cannot overflow the
 * stack.
 */
final class ModelJson {
    static final int MAX_DEPTH = 32;

    private final String s;
    private int at;

    private ModelJson(String s) {
        this.s = s;
    }

    /** The value in {@code text}. */
    static Object parse(String text) {
        ModelJson j = new ModelJson(text);
        Object v = j.value(0);
        j.space();
        if (j.at != text.length()) {
            throw j.error("text after the header's value");
        }
        return v;
    }

    /** {@code value} (maps, lists, strings, numbers, booleans, null) as JSON text. */
    static String write(Object value) {
        StringBuilder b = new StringBuilder();
        write(b, value);
        return b.toString();
    }

    private static void write(StringBuilder b, Object v) {
        switch (v) {
            case null -> b.append("null");
            case String str -> quote(b, str);
            case Boolean bool -> b.append(bool);
            case Double d when !Double.isFinite(d) -> throw new IllegalArgumentException("JSON has no " + d);
            case Double d -> b.append(d);
            case Number n -> b.append(n.longValue());
            case Map<?, ?> m -> {
                b.append('{');
                String sep = "";
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    b.append(sep);
                    quote(b, (String) e.getKey());
                    b.append(": ");
                    write(b, e.getValue());
                    sep = ", ";
                }
                b.append('}');
            }
            case List<?> l -> {
                b.append('[');
                for (int i = 0; i < l.size(); i++) {
                    b.append(i > 0 ? ", " : "");
                    write(b, l.get(i));
                }
                b.append(']');
            }
            default ->
                throw new IllegalArgumentException(
                        "no JSON form for " + v.getClass().getName());
        }
    }

    private static void quote(StringBuilder b, String value) {
        b.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nesting deeper than " + MAX_DEPTH);
        }
        space();
        if (at >= s.length()) {
            throw error("a value expected");
        }
        return switch (s.charAt(at)) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> word("true", Boolean.TRUE);
            case 'f' -> word("false", Boolean.FALSE);
            case 'n' -> word("null", null);
            default -> number();
        };
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> m = new LinkedHashMap<>();
        at++;
        space();
        if (peek() == '}') {
            at++;
            return m;
        }
        while (true) {
            space();
            int keyAt = at;
            String key = string();
            space();
            expect(':');
            if (m.containsKey(key)) {
                at = keyAt;
                throw error("key '" + key + "' twice");
            }
            m.put(key, value(depth + 1));
            space();
            if (peek() == ',') {
                at++;
            } else {
                expect('}');
                return m;
            }
        }
    }

    private List<Object> array(int depth) {
        List<Object> l = new ArrayList<>();
        at++;
        space();
        if (peek() == ']') {
            at++;
            return l;
        }
        while (true) {
            l.add(value(depth + 1));
            space();
            if (peek() == ',') {
                at++;
            } else {
                expect(']');
                return l;
            }
        }
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (at >= s.length()) {
                throw error("an unterminated string");
            }
            char c = s.charAt(at++);
            if (c == '"') {
                return b.toString();
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (at >= s.length()) {
                throw error("an unterminated string");
            }
            char e = s.charAt(at++);
            switch (e) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case '"', '\\', '/' -> b.append(e);
                case 'u' -> {
                    if (at + 4 > s.length()) {
                        throw error("a short \\u escape");
                    }
                    try {
                        b.append((char) Integer.parseInt(s.substring(at, at + 4), 16));
                    } catch (NumberFormatException x) {
                        throw error("a bad \\u escape");
                    }
                    at += 4;
                }
                default -> throw error("escape \\" + e);
            }
        }
    }

    private Object number() {
        int start = at;
        boolean integral = true;
        if (peek() == '-') {
            at++;
        }
        while (at < s.length()) {
            char c = s.charAt(at);
            if (c >= '0' && c <= '9') {
                at++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                at++;
            } else {
                break;
            }
        }
        String t = s.substring(start, at);
        if (t.isEmpty() || t.equals("-")) {
            at = start;
            throw error("a value expected");
        }
        try {
            if (integral) {
                return Long.parseLong(t);
            }
            double d = Double.parseDouble(t);
            if (!Double.isFinite(d)) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            at = start;
            throw error("number '" + t + "' (expected: a finite JSON number; integers within int64)");
        }
    }

    private Object word(String w, Object v) {
        if (!s.startsWith(w, at)) {
            throw error("a value expected");
        }
        at += w.length();
        return v;
    }

    private char peek() {
        return at < s.length() ? s.charAt(at) : '\0';
    }

    private void expect(char c) {
        if (peek() != c) {
            throw error("'" + c + "' expected");
        }
        at++;
    }

    private void space() {
        while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
            at++;
        }
    }

    private ModelFileException error(String what) {
        return new ModelFileException("header", "not JSON: " + what + " at character " + at);
    }
}
