from django.urls import path

from . import views

app_name = "sweeps"

urlpatterns = [
    path("sweeps/<slug:slug>/", views.run, name="run"),
]
