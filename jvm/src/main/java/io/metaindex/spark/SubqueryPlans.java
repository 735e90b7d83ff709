package io.metaindex.spark;

import java.util.function.UnaryOperator;

import org.apache.spark.sql.catalyst.expressions.DynamicPruningSubquery;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;

import scala.Function1;
import scala.runtime.AbstractPartialFunction;

/**
 * The plans of a node's subquery expressions (scalar, {@code EXISTS}, {@code IN}, lateral),
 * each put through a function; the node itself when none changes.
 *
 * <p>Spark optimizes a subquery's plan on its own (its optimizer run, our rule included) before
 * the plan around it. Delta's {@code PrepareDeltaScan} does not prepare a subquery on its own
 * (it prepares every subquery of the plan around it, to plan Delta's work once), so a Delta
 * read inside a subquery is only ready for our rule when the rule sees the plan around it.
 * Dynamic partition pruning's subqueries are left alone: their plan is the other side of a
 * join, kept equal to it so that Spark can reuse its broadcast.
 */
final class SubqueryPlans extends AbstractPartialFunction<Expression, Expression> {
    private final UnaryOperator<LogicalPlan> walk;

    private SubqueryPlans(UnaryOperator<LogicalPlan> walk) {
        this.walk = walk;
    }

    /** {@code plan} with each subquery expression's plan replaced by {@code walk} of it. */
    static LogicalPlan walked(LogicalPlan plan, UnaryOperator<LogicalPlan> walk) {
        if (plan.subqueries().isEmpty()) {
            return plan;
        }
        return (LogicalPlan) plan.transformExpressions(new SubqueryPlans(walk));
    }

    @Override
    public boolean isDefinedAt(Expression e) {
        return e instanceof SubqueryExpression && !(e instanceof DynamicPruningSubquery);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A1 extends Expression, B1> B1 applyOrElse(A1 e, Function1<A1, B1> fallback) {
        if (!isDefinedAt(e)) {
            return fallback.apply(e);
        }
        SubqueryExpression s = (SubqueryExpression) e;
        LogicalPlan now = walk.apply(s.plan());
        return (B1) (now == s.plan() ? s : s.withNewPlan(now));
    }
}
