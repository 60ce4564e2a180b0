"""The reference's five success questions, answered in one table (issue 85): the table and the degradation curve."""
