//! `tinct.jobs()`: a Python program as a tinct task on the `futex`
//! protocol (docs/FORMAT.md): `for job in tinct.jobs(): ...`
//! blocks until each release (the GIL released while it waits) and ends
//! the previous job when the loop comes round; the loop ends when tinct
//! asks the program to exit. A binding of the tinct-job crate, the same
//! page and words as the C library's.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

/// How often a wait looks at Python's signals.
const SIGNAL_LOOK: std::time::Duration = std::time::Duration::from_millis(50);

/// The jobs tinct releases to this program, in order: iterate over it.
#[pyclass(name = "Jobs", module = "tinct._tinct", frozen)]
pub struct PyJobs {
    jobs: tinct_job::Jobs,
}

#[pymethods]
impl PyJobs {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Ends the previous job, waits for the next release and returns the
    /// job's number; stops when tinct asks the program to exit. Waits in
    /// slices of 50 ms, the GIL released, so that Ctrl-C and signal
    /// handlers run while it waits.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        loop {
            match py.detach(|| self.jobs.wait_for(Some(SIGNAL_LOOK))) {
                tinct_job::Wait::Job(job) => return Ok(Some(job)),
                tinct_job::Wait::Stop => return Ok(None),
                tinct_job::Wait::TimedOut => py.check_signals()?,
            }
        }
    }

    /// Ends the current job now (before the loop comes round); False if
    /// none was open.
    fn done(&self) -> bool {
        self.jobs.done()
    }
}

/// The jobs of this program, from the page tinct named in `TINCT_JOB_FD`;
/// `OSError` when the program was not started by tinct with `protocol =
/// "futex"`.
#[pyfunction]
pub(crate) fn jobs() -> PyResult<PyJobs> {
    tinct_job::Jobs::from_env()
        .map(|jobs| PyJobs { jobs })
        .map_err(|e| PyOSError::new_err(e.to_string()))
}
