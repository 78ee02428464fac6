"""Measuring kernels as TVM builds them: MetaSchedule's tuner on one kernel (:mod:`.tuning`), the best
of a few design-space samples per kernel kept in a database (:mod:`.schedule_db`), and the JSON file
several processes share to remember what was measured (:mod:`.disk_cache`).

This package decides how fast a kernel runs on this machine; the ``tvm`` cost model
(:mod:`gsl_eq.cost.tvm_cost`) and measured selection (:mod:`gsl_eq.optimizer.selection`) read it.
"""
