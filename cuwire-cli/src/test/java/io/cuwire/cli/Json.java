package io.cuwire.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the DevTools protocol needs in tests: {@link #parse} into maps, lists, strings, doubles, booleans
 * and {@code null}, and {@link #quote} for a string value.
 */
final class Json {
    private final String s;
    private int at;

    private Json(String s) {
        this.s = s;
    }

    /** The value in {@code text}, which must hold one value and nothing after it. */
    static Object parse(String text) {
        Json j = new Json(text);
        Object v = j.value();
        j.space();
        if (j.at != text.length()) {
            throw j.error("text after the value");
        }
        return v;
    }

    /** {@code value} as a JSON string literal. */
    static String quote(String value) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private Object value() {
        space();
        if (at >= s.length()) {
            throw error("a value expected");
        }
        char c = s.charAt(at);
        return switch (c) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> word("true", Boolean.TRUE);
            case 'f' -> word("false", Boolean.FALSE);
            case 'n' -> word("null", null);
            default -> number();
        };
    }

    private Map<String, Object> object() {
        Map<String, Object> m = new LinkedHashMap<>();
        at++;
        space();
        if (peek() == '}') {
            at++;
            return m;
        }
        while (true) {
            space();
            String key = string();
            space();
            expect(':');
            m.put(key, value());
            space();
            if (peek() == ',') {
                at++;
            } else {
                expect('}');
                return m;
            }
        }
    }

    private List<Object> array() {
        List<Object> l = new ArrayList<>();
        at++;
        space();
        if (peek() == ']') {
            at++;
            return l;
        }
        while (true) {
            l.add(value());
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
            char e = s.charAt(at++);
            switch (e) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'u' -> {
                    b.append((char) Integer.parseInt(s.substring(at, at + 4), 16));
                    at += 4;
                }
                default -> b.append(e);
            }
        }
    }

    private Object word(String w, Object v) {
        if (!s.startsWith(w, at)) {
            throw error("'" + w + "' expected");
        }
        at += w.length();
        return v;
    }

    private Double number() {
        int from = at;
        while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) {
            at++;
        }
        if (from == at) {
            throw error("a value expected");
        }
        return Double.valueOf(s.substring(from, at));
    }

    private void space() {
        while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
            at++;
        }
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

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException(
                "JSON at " + at + ": " + what + " in " + s.substring(0, Math.min(s.length(), 200)));
    }
}
