DROP TABLE facet_totals;
