package io.metaindex.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.Contains;
import org.apache.spark.sql.catalyst.expressions.EndsWith;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GetStructField;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNaN;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.StartsWith;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Catalyst filter expressions as the JSON of the issue-7 contract (see
 * {@code metaindex/spark/filters.py}). Anything this class does not know becomes
 * {@code {"op": "unknown"}} or a literal of type {@code "other"}, which Python treats as TRUE
 * for the whole top-level conjunct: an unknown shape can only keep files, never drop them.
 */
final class FilterJson {
    private FilterJson() {
    }

    /** {@code [NODE, ...]} for the given top-level conjuncts. */
    static void writeAll(StringBuilder out, List<Expression> filters) {
        out.append('[');
        for (int i = 0; i < filters.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            node(out, filters.get(i));
        }
        out.append(']');
    }

    static void node(StringBuilder out, Expression e) {
        int mark = out.length();
        try {
            if (!known(out, e)) {
                out.setLength(mark);
                unknown(out, e);
            }
        } catch (RuntimeException ex) {
            out.setLength(mark);
            unknown(out, e);
        }
    }

    private static void unknown(StringBuilder out, Expression e) {
        String sql;
        try {
            sql = e.sql();
        } catch (RuntimeException ex) {
            sql = e.getClass().getSimpleName();
        }
        out.append("{\"op\":\"unknown\",\"sql\":");
        string(out, sql);
        out.append('}');
    }

    private static boolean known(StringBuilder out, Expression e) {
        if (e instanceof And) {
            return binary(out, "and", ((And) e).left(), ((And) e).right());
        }
        if (e instanceof Or) {
            return binary(out, "or", ((Or) e).left(), ((Or) e).right());
        }
        if (e instanceof Not) {
            out.append("{\"op\":\"not\",\"child\":");
            node(out, ((Not) e).child());
            out.append('}');
            return true;
        }
        if (e instanceof BinaryComparison) {
            return comparison(out, (BinaryComparison) e);
        }
        if (e instanceof StartsWith) {
            return pattern(out, "starts_with", ((StartsWith) e).left(), ((StartsWith) e).right());
        }
        if (e instanceof EndsWith) {
            return pattern(out, "ends_with", ((EndsWith) e).left(), ((EndsWith) e).right());
        }
        if (e instanceof Contains) {
            return pattern(out, "contains", ((Contains) e).left(), ((Contains) e).right());
        }
        if (e instanceof In) {
            In in = (In) e;
            List<Expression> list = SparkCompat.toList(in.list());
            for (Expression v : list) {
                if (!(v instanceof Literal)) {
                    return false;
                }
            }
            return in(out, in.value(), list.size(), list, null);
        }
        if (e instanceof InSet) {
            InSet in = (InSet) e;
            List<Object> values = SparkCompat.toList(in.hset());
            return in(out, in.child(), values.size(), null, values);
        }
        if (e instanceof IsNull) {
            return unary(out, "is_null", ((IsNull) e).child());
        }
        if (e instanceof IsNotNull) {
            return unary(out, "is_not_null", ((IsNotNull) e).child());
        }
        if (e instanceof IsNaN) {
            return unary(out, "is_nan", ((IsNaN) e).child());
        }
        return false;
    }

    private static boolean binary(StringBuilder out, String op, Expression l, Expression r) {
        out.append("{\"op\":\"").append(op).append("\",\"left\":");
        node(out, l);
        out.append(",\"right\":");
        node(out, r);
        out.append('}');
        return true;
    }

    private static boolean comparison(StringBuilder out, BinaryComparison c) {
        String op;
        String swapped;
        if (c instanceof EqualTo) {
            op = "eq";
            swapped = "eq";
        } else if (c instanceof EqualNullSafe) {
            op = "eq_null_safe";
            swapped = "eq_null_safe";
        } else if (c instanceof LessThan) {
            op = "lt";
            swapped = "gt";
        } else if (c instanceof LessThanOrEqual) {
            op = "le";
            swapped = "ge";
        } else if (c instanceof GreaterThan) {
            op = "gt";
            swapped = "lt";
        } else if (c instanceof GreaterThanOrEqual) {
            op = "ge";
            swapped = "le";
        } else {
            return false;
        }
        if (column(c.left()) != null && c.right() instanceof Literal) {
            return leaf(out, op, c.left(), (Literal) c.right());
        }
        if (column(c.right()) != null && c.left() instanceof Literal) {
            return leaf(out, swapped, c.right(), (Literal) c.left());
        }
        return false;
    }

    private static boolean pattern(StringBuilder out, String op, Expression col, Expression lit) {
        if (column(col) == null || !(lit instanceof Literal)) {
            return false;
        }
        return leaf(out, op, col, (Literal) lit);
    }

    private static boolean leaf(StringBuilder out, String op, Expression col, Literal lit) {
        out.append("{\"op\":\"").append(op).append("\",\"col\":");
        name(out, column(col));
        out.append(",\"value\":");
        literal(out, lit.value(), lit.dataType());
        out.append('}');
        return true;
    }

    private static boolean unary(StringBuilder out, String op, Expression col) {
        List<String> name = column(col);
        if (name == null) {
            return false;
        }
        out.append("{\"op\":\"").append(op).append("\",\"col\":");
        name(out, name);
        out.append('}');
        return true;
    }

    private static boolean in(StringBuilder out, Expression col, int n, List<Expression> literals,
                              List<Object> internal) {
        List<String> name = column(col);
        if (name == null) {
            return false;
        }
        out.append("{\"op\":\"in\",\"col\":");
        name(out, name);
        out.append(",\"values\":[");
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                out.append(',');
            }
            if (literals != null) {
                Literal lit = (Literal) literals.get(i);
                literal(out, lit.value(), lit.dataType());
            } else {
                literal(out, internal.get(i), col.dataType());
            }
        }
        out.append("]}");
        return true;
    }

    /**
     * The column path of an attribute or a chain of struct field accesses on one; null for
     * anything else, and for strings under a collation other than UTF8_BINARY (their
     * comparisons are not byte-wise).
     */
    static List<String> column(Expression e) {
        if (!SparkCompat.binaryCollation(e.dataType())) {
            return null;
        }
        List<String> parts = new ArrayList<>();
        Expression cur = e;
        while (cur instanceof GetStructField) {
            GetStructField g = (GetStructField) cur;
            DataType childType = g.child().dataType();
            if (!(childType instanceof StructType)) {
                return null;
            }
            parts.add(((StructType) childType).fields()[g.ordinal()].name());
            cur = g.child();
        }
        if (!(cur instanceof AttributeReference)) {
            return null;
        }
        parts.add(((AttributeReference) cur).name());
        Collections.reverse(parts);
        return parts;
    }

    private static void name(StringBuilder out, List<String> parts) {
        out.append('[');
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            string(out, parts.get(i));
        }
        out.append(']');
    }

    /** A literal in Catalyst's internal representation as a LIT of the contract. */
    static void literal(StringBuilder out, Object v, DataType t) {
        if (v == null || t instanceof NullType) {
            out.append("{\"type\":\"null\"}");
        } else if (t instanceof BooleanType) {
            out.append("{\"type\":\"boolean\",\"value\":").append((boolean) (Boolean) v).append('}');
        } else if (t instanceof ByteType) {
            integer(out, "byte", ((Byte) v).longValue());
        } else if (t instanceof ShortType) {
            integer(out, "short", ((Short) v).longValue());
        } else if (t instanceof IntegerType) {
            integer(out, "int", ((Integer) v).longValue());
        } else if (t instanceof LongType) {
            integer(out, "long", (Long) v);
        } else if (t instanceof FloatType) {
            out.append("{\"type\":\"float\",\"bits\":")
                    .append(Float.floatToRawIntBits((Float) v)).append('}');
        } else if (t instanceof DoubleType) {
            out.append("{\"type\":\"double\",\"bits\":")
                    .append(Double.doubleToRawLongBits((Double) v)).append('}');
        } else if (t instanceof StringType && SparkCompat.binaryCollation(t)) {
            UTF8String s = (UTF8String) v;
            String text = s.toString();
            if (!Arrays.equals(text.getBytes(StandardCharsets.UTF_8), s.getBytes())) {
                other(out, "invalid UTF-8 string literal");  // toString() replaced bytes
                return;
            }
            out.append("{\"type\":\"string\",\"value\":");
            string(out, text);
            out.append('}');
        } else if (t instanceof BinaryType) {
            out.append("{\"type\":\"binary\",\"base64\":\"")
                    .append(Base64.getEncoder().encodeToString((byte[]) v)).append("\"}");
        } else if (t instanceof DecimalType) {
            DecimalType d = (DecimalType) t;
            out.append("{\"type\":\"decimal\",\"value\":");
            string(out, ((Decimal) v).toJavaBigDecimal().toPlainString());
            out.append(",\"precision\":").append(d.precision())
                    .append(",\"scale\":").append(d.scale()).append('}');
        } else if (t instanceof DateType) {
            out.append("{\"type\":\"date\",\"days\":").append((int) (Integer) v).append('}');
        } else if (t instanceof TimestampType) {
            out.append("{\"type\":\"timestamp\",\"micros\":").append((long) (Long) v).append('}');
        } else if (t instanceof TimestampNTZType) {
            out.append("{\"type\":\"timestamp_ntz\",\"micros\":").append((long) (Long) v)
                    .append('}');
        } else {
            other(out, t.simpleString());
        }
    }

    private static void integer(StringBuilder out, String type, long v) {
        out.append("{\"type\":\"").append(type).append("\",\"value\":").append(v).append('}');
    }

    private static void other(StringBuilder out, String sql) {
        out.append("{\"type\":\"other\",\"sql\":");
        string(out, sql);
        out.append('}');
    }

    /** A JSON string literal (control characters, quotes and backslashes escaped). */
    static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c == 0x2028 || c == 0x2029
                    || Character.isSurrogate(c) && !validSurrogate(s, i)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    private static boolean validSurrogate(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
