"""Pages of the planner for end users."""

from django.urls import path

from reminders.views import tasks_page

app_name = "reminders"
urlpatterns = [path("tasks/", tasks_page, name="tasks")]
